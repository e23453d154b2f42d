"""/bot kill and /bot reuse-pipeline on GitHub Actions, as on Jenkins (carry_out.py, reuse.py):

/bot kill            cancel the pull request's runs that have not ended; their statuses "killed by
                     /bot kill"; a reply listing them
/bot reuse-pipeline  cancel them too; the newest passing run's statuses carried to the head when the
                     selection it archived is the one its request (archived beside it) selects now, and its
                     commit holds the head's code (the same git tree) unless the commenter may `/bot skip`
"""

from __future__ import annotations

from ci_tool.bot.reply import code, with_lines
from ci_tool.bot.status import carried
from ci_tool.dispatch.actions_results import selection_artifact, selection_files
from ci_tool.dispatch.actions_trigger import cancel_pull_request
from ci_tool.dispatch.model import Build, PullRequest, StatusState
from ci_tool.errors import DispatchError, StageError
from ci_tool.outcomes import BuildResult
from ci_tool.pr_bot.actions_run import archived_record
from ci_tool.pr_bot.actions_services import ActionsServices, mark_cancelled, run_link
from ci_tool.pr_bot.preview import HeadInputs, plan_at_head
from ci_tool.pr_bot.reuse import why_not_reusable
from ci_tool.stages.request import SelectionRequest, request_from_json


def kill(services: ActionsServices, pr_number: int, reply: str) -> None:
    runs = cancel_pull_request(services.client, services.repository, services.ref, pr_number)
    lines = mark_cancelled(services, runs, None)
    services.echo(f"killed: {len(runs)} run(s) cancelled")
    services.replies.comment(with_lines(reply, lines, none="Nothing was running for this pull request."))


def reuse(services: ActionsServices, pr: PullRequest, reply: str, head: HeadInputs, *, may_skip: bool) -> None:
    """/bot reuse-pipeline: see the module docstring."""
    client, replies = services.client, services.replies
    lines = mark_cancelled(services, cancel_pull_request(client, pr.repository, services.ref, pr.number), None)
    passing = [
        r
        for r in client.runs(pr.repository, branch=services.ref)
        if r.parameters.get("PR_NUMBER") == str(pr.number) and r.result is BuildResult.SUCCESS
    ]
    if not passing:
        services.echo("reuse: no passing run of this pull request")
        none = "No passing run of this pull request to reuse: comment `/bot run`."
        replies.comment(with_lines(reply, [*lines, none], none=""))
        return
    previous = passing[0]
    record = archived_record(services, previous)
    request = _archived_request(services, previous)
    why = why_not_reusable(record, plan_at_head(head, request).selection.names if request is not None else None)
    if record is None or why is not None:
        why = why or "archived no readable selection"
        services.echo(f"reuse: run {previous.number} {why}")
        replies.comment(with_lines(reply, [*lines, f"{_run(previous)} {why}: comment `/bot run` to test this commit."],
                                   none=""))  # fmt: skip
        return
    sha = record.head or previous.parameters.get("HEAD_SHA", "")
    other_code = _other_code(services, pr, sha)
    if other_code and not may_skip:  # carrying green to code no run tested is what /bot skip does
        services.echo(f"reuse: run {previous.number} {other_code}; the commenter may not /bot skip")
        refusal = (
            f"{_run(previous)} {other_code}: reusing it for other code needs the `kill_skip` permission, as "
            "`/bot skip` does. Comment `/bot run` to test this commit."
        )
        replies.comment(with_lines(reply, [*lines, refusal], none=""))
        return
    statuses = replies.github.statuses(pr.repository, sha) if sha else {}
    reused = [s for s in statuses.values() if s.target_url == previous.url and s.state is StatusState.SUCCESS]
    for status in reused:
        replies.status(pr.head_sha, carried(status, previous))
    services.echo(f"reused: run {previous.number}: {len(reused)} status(es) carried to {pr.head_sha[:12]}")
    carried_lines = [f"Carried {code(s.context)} from {run_link(previous)}." for s in reused]
    replies.comment(with_lines(reply, [*lines, *(carried_lines or [f"Run {previous.number} left no status."])],
                               none=""))  # fmt: skip


def _run(run: Build) -> str:
    return f"Run [{run.number}]({run.url})"


def _archived_request(services: ActionsServices, run: Build) -> SelectionRequest | None:
    """The request a run's plan job archived (request.json beside selection.json); None when none is read."""
    found = selection_artifact(services.client.artifacts(services.repository, run.number))
    if found is None:
        return None
    _, data = selection_files(services.client, services.repository, found)
    try:
        return request_from_json(data) if data is not None else None
    except (StageError, DispatchError):
        return None


def _other_code(services: ActionsServices, pr: PullRequest, run_sha: str) -> str:
    """Why a run's commit holds other code than the head ("" when the git trees are the same)."""
    if not run_sha:
        return "names no commit"
    if run_sha == pr.head_sha:
        return ""
    github = services.replies.github
    if github.commit(pr.repository, run_sha).tree_sha == github.commit(pr.repository, pr.head_sha).tree_sha:
        return ""
    return f"tested {code(run_sha[:12])}, whose code (git tree) differs from the head {code(pr.head_sha[:12])}'s"
