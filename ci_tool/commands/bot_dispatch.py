"""`ci-tool bot handle` without --dry-run: carry a dispatch decision out on Jenkins and GitHub.

    /bot run             refused when the head was committed after the comment; the comment claimed (the
                         bot's reaction: one handling wins, the others follow its build); plan reply; stop
                         the PR's older runs; trigger (idempotent, dispatch/trigger.py); the reply edited to
                         "triggered: build N", or to why Jenkins could not start it (error status); pending
                         status; with --wait, the build followed to its end, the CI report posted and the
                         final status set (never success without a test report)
    /bot kill            stop the PR's runs; their statuses "killed by /bot kill"; a reply listing them
    /bot skip            the full build's context green on the head, the comment as description
    /bot reuse-pipeline  stop the PR's runs; the newest passing build's statuses carried to the head when
                         the selection it archived is the one its request selects now, and its commit holds
                         the head's code (the same git tree) unless the commenter may `/bot skip`

A reply or status GitHub refuses is reported (a warning line, exit 1 at the end) and never undoes, loses or
repeats the dispatch: handling the comment again finds the build instead of triggering one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import click

from ci_tool.atomic import append_text
from ci_tool.bot.build_report import FinishedBuild, render_ci_report, totals
from ci_tool.bot.build_report import ci_report as build_ci_report
from ci_tool.bot.event import Action, Decision
from ci_tool.bot.plan import RunPlan
from ci_tool.bot.reply import (
    cancelled_in_queue,
    code,
    could_not_reach,
    could_not_start,
    pushed_after_comment,
    queued,
    shorten,
    stopped_lines,
    triggered,
    with_lines,
)
from ci_tool.bot.status import (
    KILLED_BY_KILL,
    KILLED_BY_NEWER,
    carried,
    context_for,
    final,
    killed,
    not_started,
    pending,
    skipped,
    unfollowed,
    untested,
)
from ci_tool.bot.status import cancelled as cancelled_status
from ci_tool.commands.dispatch_options import DispatchSettings
from ci_tool.dispatch.github import Claim, GitHubClient, utc_text
from ci_tool.dispatch.jenkins import JenkinsClient, NotFound
from ci_tool.dispatch.model import Build, JenkinsCase, PullRequest, Status, StatusState
from ci_tool.dispatch.trigger import (
    Claimed,
    Dispatch,
    Pace,
    QueueWait,
    Started,
    Stopped,
    find_in_jenkins,
    resume_or_claim,
    stop_pull_request,
    trigger,
    wait_for_end,
)
from ci_tool.errors import DispatchError, StageError
from ci_tool.history.flakiness import known_flaky
from ci_tool.history.ledger import DispatchKey, find_dispatch
from ci_tool.history.store import HistoryStore
from ci_tool.layout import SELECTION_ARTIFACT, TEST_JOB
from ci_tool.outcomes import BuildResult, TestOutcome
from ci_tool.report.links import ReportUrl
from ci_tool.stages.record import SelectionRecord, read_record
from ci_tool.stages.request import SelectionRequest, request_from_json

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Answer:
    """What `bot handle` decided about a comment, with what it read and planned."""

    decision: Decision
    reply: str
    pr: PullRequest | None  # read for run, skip and reuse-pipeline
    plan: RunPlan | None  # for a /bot run
    plan_for: Callable[[SelectionRequest], RunPlan]  # plans another request the same way (reuse-pipeline)
    may_skip: bool = False  # the commenter holds kill_skip (reuse-pipeline of a build of other code)


def carry_out(
    answer: Answer,
    github: GitHubClient,
    jenkins: JenkinsClient | None,
    settings: DispatchSettings,
    *,
    github_output: Path | None,
) -> int:
    """Post the reply, or act on Jenkins and GitHub for a dispatch; 1 when GitHub refused a post."""
    decision, reply, pr, request = answer.decision, answer.reply, answer.pr, answer.decision.request
    event = decision.event
    replies = Replies(github, event.repository, event.number)
    if decision.action is not Action.DISPATCH or request is None:
        replies.comment(reply)
    elif pr is not None and _pushed_after(replies, decision, pr):
        pass  # the command was written for an older head: the reply says so
    elif request.command == "skip" and pr is not None:
        skip(replies, pr, str(request.flags.get("comment", "")), reply)
    elif jenkins is not None:
        with settings.history() as history:
            services = Services(jenkins, replies, settings.jenkins_job, history, settings.pace(), settings.report_url)
            if request.command == "run" and answer.plan is not None and pr is not None:
                started = run(services, decision, answer.plan, pr, reply, wait=settings.wait)
                if github_output is not None and started.build is not None:
                    outputs = f"build={started.build.number}\nbuild_url={started.build.url}\n"
                    append_text(github_output, outputs, what="the GitHub outputs")
            elif request.command in ("kill", "reuse-pipeline"):
                try:
                    if request.command == "kill":
                        kill(services, event.number, reply)
                    elif pr is not None:
                        reuse(services, pr, reply, answer.plan_for, may_skip=answer.may_skip)
                except DispatchError as error:  # the commenter hears it (their reply is posted last: none yet)
                    replies.comment(could_not_reach(reply, f"/bot {request.command}", error))
                    raise
    return 1 if replies.failures else 0


@dataclass
class Replies:
    """Posts on one pull request; a refused post is a warning and counts as a failure (exit 1)."""

    github: GitHubClient
    repository: str
    number: int
    failures: int = 0
    echo: Echo = field(default=click.echo)

    def _warn(self, error: DispatchError) -> None:
        self.failures += 1
        click.echo(f"warning: {error}", err=True)

    def comment(self, body: str) -> int | None:
        try:
            return self.github.comment(self.repository, self.number, shorten(body))
        except DispatchError as error:
            self._warn(error)
            return None

    def reply_once(self, marker: str, body: str) -> int | None:
        """Post `body` (which holds the hidden `marker`), or edit the earlier reply holding it (a comment handled
        again): one reply per comment, however often it is handled."""
        try:
            earlier = self.github.find_comment(self.repository, self.number, marker)
        except DispatchError as error:
            self._warn(error)
            earlier = None
        if earlier is None:
            return self.comment(body)
        self.edit(earlier, body)
        return earlier

    def edit(self, comment_id: int | None, body: str) -> None:
        if comment_id is None:  # the first post failed: post what there is now
            self.comment(body)
            return
        try:
            self.github.edit_comment(self.repository, self.number, comment_id, shorten(body))
        except DispatchError as error:
            self._warn(error)

    def status(self, sha: str, status: Status) -> None:
        if not sha:
            return
        try:
            self.github.set_status(self.repository, sha, status)
        except DispatchError as error:
            self._warn(error)
        else:
            self.echo(f"status {status.context!r} on {sha[:12]}: {status.state.value}: {status.description}")

    def claim(self, comment_id: int) -> Claim | None:
        """The comment's claim (None when GitHub refused the reaction: the handling goes on unclaimed)."""
        try:
            return self.github.claim(self.repository, comment_id)
        except DispatchError as error:
            self._warn(error)
            return None

    def release(self, comment_id: int, claim: Claim | None) -> None:
        if claim is None or not claim.won:
            return
        try:
            self.github.release(self.repository, comment_id, claim)
        except DispatchError as error:
            self._warn(error)

    def current(self, sha: str, context: str) -> Status | None:
        try:
            return self.github.statuses(self.repository, sha).get(context)
        except DispatchError as error:
            self._warn(error)
            return None


@dataclass(frozen=True)
class Services:
    jenkins: JenkinsClient
    replies: Replies
    job: str
    history: HistoryStore
    pace: Pace
    report_url: ReportUrl | None = None  # where the build's HTML report is, for the final CI report
    wall: Callable[[], float] = field(default=time.time, compare=False)

    @property
    def test_job(self) -> str:
        """L0_Test beside the triggered job (in its folder)."""
        folder = self.job.rpartition("/")[0]
        return f"{folder}/{TEST_JOB}" if folder else TEST_JOB


def _request_of(parameters: Mapping[str, str]) -> SelectionRequest | None:
    """The request a build (or queued item) was triggered with, None when it holds none ci-tool reads."""
    try:
        return request_from_json(json.loads(parameters.get("REQUEST", "")))
    except (ValueError, StageError):
        return None


def _context_of(parameters: Mapping[str, str]) -> str:
    request = _request_of(parameters)
    return context_for(request if request is not None else SelectionRequest())


def _mark_stopped(services: Services, runs: Stopped, by: Build | None) -> list[str]:
    """Each stopped build's and cancelled item's status, "killed by ..." (linked to `by`); the reply lines."""
    for parameters in [item.parameters for item in runs.cancelled] + [b.parameters for b in runs.stopped]:
        services.replies.status(parameters.get("HEAD_SHA", ""), killed(_context_of(parameters), by))
    reason = KILLED_BY_KILL if by is None else f"{KILLED_BY_NEWER} ([build {by.number}]({by.url}))"
    return stopped_lines(
        [(item.id, item.url) for item in runs.cancelled], [(b.number, b.url) for b in runs.stopped], reason=reason
    )


def run(services: Services, decision: Decision, plan: RunPlan, pr: PullRequest, reply: str, *, wait: bool) -> Started:
    """/bot run: see the module docstring."""
    request = plan.selection.request
    request_json = json.dumps(request.to_json())
    event = decision.event
    parameters = {
        "REQUEST": request_json,
        "LABELS": json.dumps(list(pr.labels)),
        "PR_NUMBER": str(pr.number),
        "HEAD_SHA": pr.head_sha,
        "COMMENT_ID": str(event.comment_id),
        "BASE_REF": pr.base_ref,
        "PRIORITY": str(plan.selection.queue_priority),
    }
    key = DispatchKey(services.jenkins.url, services.job, event.comment_id, request_json)
    dispatch = Dispatch(key, pr.repository, pr.number, pr.head_sha, parameters)
    context = context_for(request)
    command = decision.request.line if decision.request else "/bot run"
    marker = reply_marker(event.comment_id)
    reply = reply.rstrip("\n") + f"\n{marker}\n"
    reply_id: int | None = None
    claim: Claim | None = None
    try:
        found = resume_or_claim(services.jenkins, services.history, dispatch, services.pace, echo=click.echo,
                                wall=services.wall, claim=lambda: services.replies.claim(event.comment_id))  # fmt: skip
        if isinstance(found, Claimed):
            claim = found.claim
            reply_id = services.replies.reply_once(marker, reply)
            started = _trigger(services, dispatch, pr, reply, reply_id, context)
        else:
            started = found
    except QueueWait:
        raise
    except DispatchError as error:
        _not_started(services, dispatch, error, reply=reply, reply_id=reply_id, claim=claim, context=context)
        raise
    if wait and started.build is not None:
        follow(services, started, plan, login=event.login, command=command)
    return started


def _not_started(
    services: Services,
    dispatch: Dispatch,
    error: DispatchError,
    *,
    reply: str,
    reply_id: int | None,
    claim: Claim | None,
    context: str,
) -> None:
    """The reply says why no build started, the status is an error, and the claim is given back; unless an
    earlier handling of the comment started a build (the ledger or Jenkins knows it): that one is left alone."""
    known = find_dispatch(services.history, dispatch.key)
    if (known is not None and (known.queue_id or known.build_number)) or _in_jenkins(services, dispatch):
        return
    marker = reply_marker(dispatch.key.comment_id)
    if reply_id is None:
        services.replies.reply_once(marker, could_not_start(reply, error))
    else:
        services.replies.edit(reply_id, could_not_start(reply, error))
    services.replies.status(dispatch.head_sha, not_started(context, str(error)))
    services.replies.release(dispatch.key.comment_id, claim)  # nothing started: handling it again may trigger


def reply_marker(comment_id: int) -> str:
    """An invisible line in the reply to a comment, by which handling the comment again finds that reply."""
    return f"<!-- ci-tool: the reply to comment {comment_id} -->"


def _in_jenkins(services: Services, dispatch: Dispatch) -> bool:
    """Whether Jenkins shows the dispatch's item or build (False when Jenkins cannot be asked either)."""
    try:
        return find_in_jenkins(services.jenkins, dispatch) is not None
    except DispatchError:
        return False


def _trigger(
    services: Services, dispatch: Dispatch, pr: PullRequest, reply: str, reply_id: int | None, context: str
) -> Started:
    """Stop the older runs, trigger, and edit the reply and the status to say where the build is."""
    older = stop_pull_request(services.jenkins, services.job, pr.number)
    try:
        started = trigger(services.jenkins, services.history, dispatch, services.pace, echo=click.echo,
                          wall=services.wall)  # fmt: skip
    except QueueWait as waiting:  # say where it waits, then the error
        services.replies.edit(reply_id, queued(reply, waiting.queue_url))
        services.replies.status(pr.head_sha, Status(context, StatusState.PENDING, "queued in Jenkins",
                                                    waiting.queue_url))  # fmt: skip
        raise
    lines = _mark_stopped(services, older, started.build)
    if started.build is not None:
        build = started.build
        click.echo(f"triggered: build {build.number} {build.url}")
        text = triggered(reply, build.number, build.url, services.job, head_sha=pr.head_sha)
        services.replies.edit(reply_id, with_lines(text, lines, none=""))
        services.replies.status(pr.head_sha, pending(context, build))
    else:
        queue_url = services.jenkins.url + f"queue/item/{started.queue_id}/"
        click.echo(f"cancelled: queue item {started.queue_id} was cancelled before it started a build")
        services.replies.edit(reply_id, cancelled_in_queue(reply, queue_url))
        services.replies.status(pr.head_sha, cancelled_status(context, queue_url))
    return started


def _pushed_after(replies: Replies, decision: Decision, pr: PullRequest) -> bool:
    """Refuse (replying why) when the head was committed after the comment: a run, skip or reuse-pipeline
    applies to the head the commenter saw, never to one pushed since.

    GitHub's REST API tells no push time for an ordinary push; what it tells is the head commit's committer
    date, which the committer's machine writes. A date after the comment proves the head is newer than what
    the commenter saw; a date before it proves nothing (a back-dated commit pushed later), so the build is
    also pinned to the head read here (HEAD_SHA) and never to what a branch holds when Jenkins gets to it.
    """
    approved_at = decision.event.approved_at
    if approved_at is None:
        return False
    head = replies.github.commit(pr.repository, pr.head_sha)
    if head.committed_at <= approved_at:
        return False
    command = decision.request.line if decision.request else ""
    committed, commented = utc_text(head.committed_at), utc_text(approved_at)
    click.echo(f"refused: head {pr.head_sha[:12]} committed at {committed}, after the comment at {commented}")
    replies.comment(pushed_after_comment(decision.event.login, command, pr.head_sha, committed, commented))
    return True


def follow(services: Services, started: Started, plan: RunPlan, *, login: str, command: str) -> None:
    """--wait: the build to its end, then the CI report and the final status (unless a newer run owns it).
    Whatever part of the build cannot be read (a downstream job, a test report, the run record, the log), the
    report says so and the status is still the build's; a build that cannot be followed to its end at all
    gets an error status and a comment before the error."""
    assert started.build is not None
    jenkins, job = services.jenkins, services.job
    context = context_for(plan.selection.request)
    sha = started.build.parameters.get("HEAD_SHA", "")
    unread: list[str] = []
    try:
        build = wait_for_end(jenkins, started.build, services.pace, echo=click.echo, unread=unread)
    except DispatchError as error:
        lost = started.build
        services.replies.comment(f"## CI report: [{lost.job} #{lost.number}]({lost.url}) **NOT FOLLOWED**\n\n"
                                 f"@{login}, the bot could not follow the build to its end: {error}\n")  # fmt: skip
        services.replies.status(sha, unfollowed(context, lost))
        raise
    finished = FinishedBuild(build, _downstream(services, build, unread), _newer(services, build),
                             _record(services, build, unread), tuple(unread))  # fmt: skip
    click.echo(f"ended: build {build.number}: {build.result.value if build.result else 'no result'}")
    for what in unread:
        click.echo(f"warning: could not read {what}", err=True)
    known = known_flaky(services.history, before=services.wall())  # measured on this history's runs
    report = build_ci_report(finished, plan, command=command, known=known)
    html = services.report_url.for_build(job, build.number, build.url) if services.report_url else None
    services.replies.comment(shorten(render_ci_report(finished, plan, report, login=login, html_report=html),
                                     more_at=build.console_url))  # fmt: skip
    sha = build.parameters.get("HEAD_SHA") or sha
    current = services.replies.current(sha, context)
    if current is not None and current.target_url != build.url:  # pending, unfollowed or final: this build's
        click.echo(f"status {context!r} on {sha[:12]} left as it is: {current.description} (not this build's)")
        return
    status = _final_status(context, build, finished.downstream, totals(report), unread=bool(unread))
    services.replies.status(sha, status)


def _final_status(
    context: str,
    build: Build,
    downstream: Downstream,
    counted: Mapping[TestOutcome, int],
    *,
    unread: bool,
) -> Status:
    """The final status, which never says success when there is no test result to show for it (whatever
    else could not be read: green needs evidence); `unread` adds that some results could not be read."""
    status = final(context, build, counted, unread=unread)
    if status.state is not StatusState.SUCCESS or any(cases for _, cases in downstream):
        return status
    return untested(context, build, f"no {TEST_JOB} build" if not downstream else "no test report")


Downstream = tuple[tuple[Build, tuple[JenkinsCase, ...]], ...]


def _downstream(services: Services, build: Build, unread: list[str]) -> Downstream:
    """The L0_Test builds `build` started, each with its test cases; what cannot be read goes to `unread`."""
    try:
        downs = services.jenkins.downstream(services.test_job, services.job, build.number)
    except DispatchError as error:
        unread.append(f"the {services.test_job} builds ({error})")
        return ()
    found = []
    for down in downs:
        try:
            cases = services.jenkins.test_cases(services.test_job, down.number)
        except DispatchError as error:
            unread.append(f"the test report of {services.test_job} #{down.number} ({error})")
            cases = ()
        found.append((down, cases))
    return tuple(found)


def _record(services: Services, build: Build, unread: list[str] | None = None) -> SelectionRecord | None:
    """The run record the build archived (what it selected and on which commits); None when it archived none
    ci-tool reads. With `unread`, any fault reading it is noted there instead of raised."""
    what = f"{SELECTION_ARTIFACT} of build {build.number}"
    try:
        data = services.jenkins.artifact(services.job, build.number, SELECTION_ARTIFACT)
        if data is None:
            raise NotFound(f"build {build.number} archived no {SELECTION_ARTIFACT}")
        return read_record(data, source=what)
    except (DispatchError, StageError) as error:
        if unread is None and not isinstance(error, NotFound | StageError):
            raise
        if unread is not None:
            unread.append(f"the run record ({error})")
        return None


def _newer(services: Services, build: Build) -> Build | None:
    """The newer build of the same pull request that aborted `build` (None when it was not aborted)."""
    if build.result is not BuildResult.ABORTED:
        return None
    pr_number = build.parameters.get("PR_NUMBER")
    try:
        later = [b for b in services.jenkins.builds(services.job) if b.number > build.number]
    except DispatchError:
        return None
    return next((b for b in reversed(later) if b.parameters.get("PR_NUMBER") == pr_number), None)


def kill(services: Services, pr_number: int, reply: str) -> None:
    runs = stop_pull_request(services.jenkins, services.job, pr_number)
    lines = _mark_stopped(services, runs, None)
    click.echo(f"killed: {len(runs.stopped)} build(s) stopped, {len(runs.cancelled)} queued item(s) cancelled")
    services.replies.comment(with_lines(reply, lines, none="Nothing was running for this pull request."))


def skip(replies: Replies, pr: PullRequest, comment: str, reply: str) -> None:
    status = skipped(comment)
    replies.status(pr.head_sha, status)
    replies.comment(with_lines(reply, [f"Set {code(status.context)} to success on {pr.head_sha[:12]}."], none=""))


def reuse(
    services: Services,
    pr: PullRequest,
    reply: str,
    plan_for: Callable[[SelectionRequest], RunPlan],
    *,
    may_skip: bool,
) -> None:
    """/bot reuse-pipeline: see the module docstring."""
    jenkins, replies = services.jenkins, services.replies
    lines = _mark_stopped(services, stop_pull_request(jenkins, services.job, pr.number), None)
    passing = [
        b
        for b in jenkins.builds(services.job)
        if b.parameters.get("PR_NUMBER") == str(pr.number) and b.result is BuildResult.SUCCESS
    ]
    if not passing:
        click.echo("reuse: no passing build of this pull request")
        none = "No passing build of this pull request to reuse: comment `/bot run`."
        replies.comment(with_lines(reply, [*lines, none], none=""))
        return
    previous = passing[0]
    request = _request_of(previous.parameters)
    record = _record(services, previous)
    why = _not_reusable(record, plan_for(request).selection.names if request is not None else None)
    if record is None or why is not None:
        why = why or "archived no readable selection"
        click.echo(f"reuse: build {previous.number} {why}")
        refusal = f"Build [#{previous.number}]({previous.url}) {why}: comment `/bot run` to test this commit."
        replies.comment(with_lines(reply, [*lines, refusal], none=""))
        return
    sha = record.head or previous.parameters.get("HEAD_SHA", "")
    other_code = _other_code(services, pr, sha)
    if other_code and not may_skip:  # carrying green to code no build tested is what /bot skip does
        click.echo(f"reuse: build {previous.number} {other_code}; the commenter may not /bot skip")
        refusal = (
            f"Build [#{previous.number}]({previous.url}) {other_code}: reusing it for other code needs the "
            "`kill_skip` permission, as `/bot skip` does. Comment `/bot run` to test this commit."
        )
        replies.comment(with_lines(reply, [*lines, refusal], none=""))
        return
    statuses = services.replies.github.statuses(pr.repository, sha) if sha else {}
    reused = [s for s in statuses.values() if s.target_url == previous.url and s.state is StatusState.SUCCESS]
    for status in reused:
        replies.status(pr.head_sha, carried(status, previous))
    click.echo(f"reused: build {previous.number}: {len(reused)} status(es) carried to {pr.head_sha[:12]}")
    carried_lines = [f"Carried {code(s.context)} from build [#{previous.number}]({previous.url})." for s in reused]
    carried_lines = carried_lines or [f"Build #{previous.number} left no status."]
    replies.comment(with_lines(reply, [*lines, *carried_lines], none=""))


def _other_code(services: Services, pr: PullRequest, build_sha: str) -> str:
    """Why a build's commit holds other code than the head ("" when the git trees are the same)."""
    if not build_sha:
        return "names no commit"
    if build_sha == pr.head_sha:
        return ""
    head = services.replies.github.commit(pr.repository, pr.head_sha)
    tested = services.replies.github.commit(pr.repository, build_sha)
    if tested.tree_sha == head.tree_sha:
        return ""
    return f"tested {code(build_sha[:12])}, whose code (git tree) differs from the head {code(pr.head_sha[:12])}'s"

def _not_reusable(record: SelectionRecord | None, now: tuple[str, ...] | None) -> str | None:
    """Why a passing build's run cannot stand in for the request's selection now (None: it can)."""
    if record is None:
        return None
    if now is None:
        return "holds no request ci-tool reads"
    added = [name for name in record.stages if name not in now]
    dropped = [name for name in now if name not in record.stages]
    if not added and not dropped:
        return None
    parts = [f"ran {', '.join(added)}, which the request no longer selects" if added else "",
             f"did not run {', '.join(dropped)}, which it selects now" if dropped else ""]  # fmt: skip
    return "ran another selection than its request selects now (" + "; ".join(filter(None, parts)) + ")"
