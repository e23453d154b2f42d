"""/bot reuse-pipeline: the PR's runs stopped; the newest passing build's statuses carried to the head
when the selection it archived is the one its request selects now, and its commit holds the head's code (the
same git tree) unless the commenter may `/bot skip`."""

from __future__ import annotations

from ci_tool.bot.reply import code, with_lines
from ci_tool.bot.status import carried
from ci_tool.dispatch.model import PullRequest, StatusState
from ci_tool.dispatch.trigger import stop_pull_request
from ci_tool.outcomes import BuildResult
from ci_tool.pr_bot.follow import archived_record
from ci_tool.pr_bot.preview import HeadInputs, plan_at_head
from ci_tool.pr_bot.services import Services, mark_stopped, request_of
from ci_tool.stages.record import SelectionRecord


def reuse(
    services: Services,
    pr: PullRequest,
    reply: str,
    head: HeadInputs,  # where the reply was planned: the build's request is planned there too
    *,
    may_skip: bool,
) -> None:
    """/bot reuse-pipeline: see the module docstring."""
    jenkins, replies = services.jenkins, services.replies
    lines = mark_stopped(services, stop_pull_request(jenkins, services.job, pr.number), None)
    passing = [
        b
        for b in jenkins.builds(services.job)
        if b.parameters.get("PR_NUMBER") == str(pr.number) and b.result is BuildResult.SUCCESS
    ]
    if not passing:
        services.echo("reuse: no passing build of this pull request")
        none = "No passing build of this pull request to reuse: comment `/bot run`."
        replies.comment(with_lines(reply, [*lines, none], none=""))
        return
    previous = passing[0]
    request = request_of(previous.parameters)
    record = archived_record(services, previous)
    why = why_not_reusable(record, plan_at_head(head, request).selection.names if request is not None else None)
    if record is None or why is not None:
        why = why or "archived no readable selection"
        services.echo(f"reuse: build {previous.number} {why}")
        refusal = f"Build [#{previous.number}]({previous.url}) {why}: comment `/bot run` to test this commit."
        replies.comment(with_lines(reply, [*lines, refusal], none=""))
        return
    sha = record.head or previous.parameters.get("HEAD_SHA", "")
    other_code = _other_code(services, pr, sha)
    if other_code and not may_skip:  # carrying green to code no build tested is what /bot skip does
        services.echo(f"reuse: build {previous.number} {other_code}; the commenter may not /bot skip")
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
    services.echo(f"reused: build {previous.number}: {len(reused)} status(es) carried to {pr.head_sha[:12]}")
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


def why_not_reusable(record: SelectionRecord | None, now: tuple[str, ...] | None) -> str | None:
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
