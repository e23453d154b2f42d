"""/bot run on GitHub Actions: the comment claimed, the reply, the pull request's older runs cancelled, the
generated workflow dispatched on the default branch (its trusted file) for the head commit, with the request,
labels and base the reply previewed (idempotent: dispatch/actions_trigger.py), and the reply and pending
status linking the run (or saying why none started). With --wait, the run followed to its end: the CI report
from its archived selection and JUnit artifacts, and the final status (never success without test results)."""

from __future__ import annotations

import json
from dataclasses import replace

from ci_tool.bot.event import Decision
from ci_tool.bot.plan import RunPlan
from ci_tool.bot.reply import code, shorten, with_lines
from ci_tool.bot.status import actions_context_for, final, unfollowed, untested
from ci_tool.dispatch.actions import Artifact
from ci_tool.dispatch.actions_results import result_artifacts, selection_artifact, selection_files, test_cases
from ci_tool.dispatch.actions_trigger import (
    ActionsDispatch,
    cancel_pull_request,
    dispatch_run,
    resume_or_claim,
    wait_for_end,
)
from ci_tool.dispatch.github import Claim
from ci_tool.dispatch.model import Build, JenkinsCase, PullRequest, Status, StatusState
from ci_tool.dispatch.run_name import request_digest
from ci_tool.dispatch.trigger import QueueWait, Started
from ci_tool.errors import DispatchError, StageError
from ci_tool.history.flakiness import known_flaky
from ci_tool.history.ledger import DispatchKey, find_dispatch
from ci_tool.layout import ACTIONS_RESULTS_ARTIFACT_PREFIX
from ci_tool.outcomes import BuildResult
from ci_tool.pr_bot.actions_services import ActionsServices, mark_cancelled, run_link
from ci_tool.pr_bot.ci_report import FinishedBuild, passed_after_retries, render_ci_report, totals
from ci_tool.pr_bot.ci_report import ci_report as build_ci_report
from ci_tool.stages.record import SelectionRecord, read_record


def actions_reply_marker(comment_id: int) -> str:
    """The hidden line by which handling a comment again finds its GitHub Actions reply (apart from its Jenkins
    reply, run.py's, where a project runs both engines)."""
    return f"<!-- ci-tool: the GitHub Actions reply to comment {comment_id} -->"


def actions_dispatch(services: ActionsServices, decision: Decision, plan: RunPlan, pr: PullRequest) -> ActionsDispatch:
    """The dispatch of a /bot run: the inputs of l0-test.yml (the generated workflow's workflow_dispatch)."""
    request_json = json.dumps(plan.selection.request.to_json())
    comment_id = decision.event.comment_id
    inputs = {
        "request": request_json,
        "labels": json.dumps(list(pr.labels)),
        "base_ref": pr.base_ref,
        "head_sha": pr.head_sha,
        "pr_number": str(pr.number),
        "comment_id": str(comment_id),
        "request_digest": request_digest(request_json),
    }
    key = DispatchKey(f"{services.client.api_url}/repos/{pr.repository}", services.client.workflow, comment_id,
                      request_json)  # fmt: skip
    return ActionsDispatch(key, pr.repository, pr.number, pr.head_sha, services.ref, inputs)


def run(services: ActionsServices, decision: Decision, plan: RunPlan, pr: PullRequest, reply: str, *,
        wait: bool) -> Started:  # fmt: skip
    """/bot run: see the module docstring."""
    dispatch = actions_dispatch(services, decision, plan, pr)
    context = actions_context_for(plan.selection.request)
    command = decision.request.line if decision.request else "/bot run"
    marker = actions_reply_marker(decision.event.comment_id)
    reply = reply.rstrip("\n") + f"\n{marker}\n"
    reply_id: int | None = None
    claim: Claim | None = None
    client, pace = services.client, services.pace
    try:
        found = resume_or_claim(client, services.history, dispatch, pace, echo=services.echo, wall=services.wall,
                                claim=lambda: services.replies.claim(decision.event.comment_id))  # fmt: skip
        if isinstance(found, Started):
            started = found
        else:
            claim = found
            reply_id = services.replies.reply_once(marker, reply)
            started = _dispatch(services, dispatch, reply, reply_id, context)
    except QueueWait:
        raise
    except DispatchError as error:
        _not_started(services, dispatch, error, reply=reply, reply_id=reply_id, claim=claim, context=context)
        raise
    if wait and started.build is not None:
        follow(services, started.build, plan, login=decision.event.login, command=command)
    return started


def _dispatch(services: ActionsServices, dispatch: ActionsDispatch, reply: str, reply_id: int | None,
              context: str) -> Started:  # fmt: skip
    """Cancel the older runs, dispatch, and edit the reply and the status to say where the run is."""
    client = services.client
    older = cancel_pull_request(client, dispatch.repository, dispatch.ref, dispatch.pull_request)
    try:
        started = dispatch_run(client, services.history, dispatch, services.pace, echo=services.echo,
                               wall=services.wall)  # fmt: skip
    except QueueWait as waiting:
        note = (f"dispatched: [{client.workflow}]({waiting.queue_url}) on GitHub Actions, which has not listed "
                "the run yet; the bot follows it when the comment is handled again.")  # fmt: skip
        services.replies.edit(reply_id, reply.rstrip("\n") + f"\n\n{note}\n")
        services.replies.status(dispatch.head_sha, Status(context, StatusState.PENDING, "dispatched to GitHub Actions",
                                                          waiting.queue_url))  # fmt: skip
        raise
    run = started.build
    assert run is not None  # a dispatch found its run, or raised
    lines = mark_cancelled(services, older, run)
    services.echo(f"dispatched: run {run.number} {run.url}")
    preview = (
        "The plan above is a preview from the pull request as the GitHub API shows it: the run selects again on "
        f"the commit {code(dispatch.head_sha[:12])}, and its final CI report lists what ran."
    )
    text = reply.rstrip("\n") + f"\n\ndispatched: {run_link(run)} on GitHub Actions\n\n{preview}\n"
    services.replies.edit(reply_id, with_lines(text, lines, none=""))
    services.replies.status(dispatch.head_sha, Status(context, StatusState.PENDING, f"run {run.number} started",
                                                      run.url))  # fmt: skip
    return started


def _not_started(services: ActionsServices, dispatch: ActionsDispatch, error: DispatchError, *, reply: str,
                 reply_id: int | None, claim: Claim | None, context: str) -> None:  # fmt: skip
    """The reply says why no run started, the status is an error, and the claim is given back; unless an
    earlier handling of the comment dispatched it (the ledger knows): that one is left alone."""
    known = find_dispatch(services.history, dispatch.key)
    if known is not None and known.build_number is not None:
        return
    note = (
        f"**Could not start the run**: {code(str(error))}\n\n"
        "Nothing is running for this comment: comment `/bot run` again once GitHub Actions answers."
    )
    body = reply.rstrip("\n") + f"\n\n{note}\n"
    if reply_id is None:
        services.replies.reply_once(actions_reply_marker(dispatch.key.comment_id), body)
    else:
        services.replies.edit(reply_id, body)
    description = f"could not start the run: {error}"
    services.replies.status(dispatch.head_sha, Status(context, StatusState.ERROR, description[:139]))
    services.replies.release(dispatch.key.comment_id, claim)


def follow(services: ActionsServices, run: Build, plan: RunPlan, *, login: str, command: str) -> None:
    """--wait: the run to its end, then the CI report and the final status (unless a newer run owns it)."""
    client, repository = services.client, services.repository
    context = actions_context_for(plan.selection.request)
    sha = run.parameters.get("HEAD_SHA", "")
    try:
        ended = wait_for_end(client, repository, run, services.pace)
    except DispatchError as error:
        services.replies.comment(f"## CI report: {run_link(run)} **NOT FOLLOWED**\n\n"
                                 f"@{login}, the bot could not follow the run to its end: {error}\n")  # fmt: skip
        services.replies.status(sha, unfollowed(context, run))
        raise
    unread: list[str] = []
    record, stages = _read_artifacts(services, ended, unread)
    finished = FinishedBuild(ended, stages, _newer(services, ended), record, tuple(unread))
    services.echo(f"ended: run {ended.number}: {ended.result.value if ended.result else 'no result'}")
    for what in unread:
        services.replies.err(f"warning: could not read {what}")
    known = known_flaky(services.history, before=services.wall())
    report = build_ci_report(finished, plan, command=command, known=known)
    if passed_after_retries(finished, report):  # the lost runners' jobs failed the run on GitHub: unstable
        ended = replace(ended, result=BuildResult.UNSTABLE)
        finished = replace(finished, build=ended)
        report = build_ci_report(finished, plan, command=command, known=known)
    html = services.report_url.for_build(ended.job, ended.number, ended.url) if services.report_url else None
    services.replies.comment(shorten(render_ci_report(finished, plan, report, login=login, html_report=html),
                                     more_at=ended.url))  # fmt: skip
    current = services.replies.current(sha, context)
    if current is not None and current.target_url != ended.url:  # a newer run's, or a reuse
        services.echo(f"status {context!r} on {sha[:12]} left as it is: {current.description} (not this run's)")
        return
    status = final(context, ended, totals(report), unread=bool(unread))
    if status.state is StatusState.SUCCESS and not finished.cases:
        status = untested(context, ended, "no test results")
    services.replies.status(sha, status)


Stages = tuple[tuple[Build, tuple[JenkinsCase, ...]], ...]


def _read_artifacts(services: ActionsServices, run: Build, unread: list[str]) -> tuple[SelectionRecord | None, Stages]:
    """The run record the plan job archived, and each stage's results with its test cases (a stage shown as
    the run's job of that name); what cannot be read goes to `unread`."""
    client, repository = services.client, services.repository
    try:
        artifacts = client.artifacts(repository, run.number)
    except DispatchError as error:
        unread.append(f"the artifacts of run {run.number} ({error})")
        return None, ()
    record = archived_record(services, run, unread, artifacts=artifacts)
    stages = []
    for artifact in result_artifacts(artifacts):
        name = artifact.name.removeprefix(ACTIONS_RESULTS_ARTIFACT_PREFIX)
        stage = Build(name, run.number, run.url, building=False, result=run.result, log_url=run.url)
        try:
            cases = test_cases(client, repository, artifact)
        except DispatchError as error:
            unread.append(f"the test results in {artifact.name} ({error})")
            cases = ()
        stages.append((stage, cases))
    return record, tuple(stages)


def archived_record(services: ActionsServices, run: Build, unread: list[str] | None = None, *,
                    artifacts: list[Artifact] | None = None) -> SelectionRecord | None:  # fmt: skip
    """The run record a run's plan job archived; None when it archived none ci-tool reads (with `unread`,
    why goes there; without, a fault reading it is raised)."""
    client, repository = services.client, services.repository
    try:
        found = selection_artifact(artifacts if artifacts is not None else client.artifacts(repository, run.number))
        if found is None:
            if unread is not None:
                unread.append(f"the run record (run {run.number} archived no selection)")
            return None
        data, _ = selection_files(client, repository, found)
        return read_record(data, source=f"the selection of run {run.number}")
    except (DispatchError, StageError) as error:
        if unread is None and isinstance(error, DispatchError):
            raise
        if unread is not None:
            unread.append(f"the run record ({error})")
        return None


def _newer(services: ActionsServices, run: Build) -> Build | None:
    """The newer run of the same pull request that cancelled `run` (None when it was not cancelled)."""
    if run.result is not BuildResult.ABORTED:
        return None
    number = run.parameters.get("PR_NUMBER")
    try:
        runs = services.client.runs(services.repository, branch=services.ref)
    except DispatchError:
        return None
    later = [r for r in runs if r.number > run.number and r.parameters.get("PR_NUMBER") == number]
    return later[-1] if later else None
