"""An engine as a dispatch reaches it (OnEngine: Jenkins in on_jenkins.py, GitHub Actions in on_actions.py), and
/bot kill and /bot reuse-pipeline, one flow each for every engine; what differs between Jenkins builds and
GitHub Actions runs is the engine's PullRuns:

    /bot kill            stop the pull request's runs that have not ended; their statuses "killed by
                         /bot kill"; a reply listing them
    /bot reuse-pipeline  stop them too; the newest passing run's statuses carried to the head when the
                         selection it archived is the one its request selects now, and its commit holds the
                         head's code (the same git tree) unless the commenter may `/bot skip`

What the request selects now is planned at the head by the planner the bot's reply uses (`plan_at_head`), and
the passing run's archived record is compared with that. There is no second archive to compare with: the head
has not run, and whether its catalog, test-db or labels still select the same stages is what is asked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ci_tool.bot.event import Decision
from ci_tool.bot.reply import code, with_lines
from ci_tool.bot.run_plan import RunPlan
from ci_tool.bot.status import carried
from ci_tool.dispatch.model import Build, PullRequest, StatusState
from ci_tool.dispatch.trigger import Started
from ci_tool.outcomes import BuildResult
from ci_tool.pr_bot.follow import FollowedRuns
from ci_tool.pr_bot.preview import HeadInputs, plan_at_head
from ci_tool.pr_bot.services import Replies
from ci_tool.stages.record import SelectionRecord
from ci_tool.stages.selection_request import SelectionRequest

NOTHING_RUNNING = "Nothing was running for this pull request."


@dataclass(frozen=True)
class Stopping:
    """The runs a kill or reuse stopped: the reply's lines (one a run) and the count for the log."""

    lines: list[str]
    counted: str  # `1 build(s) stopped, 0 queued item(s) cancelled`


class PullRuns(Protocol):
    """One engine's runs of a pull request, as /bot kill and /bot reuse-pipeline reach them."""

    @property
    def noun(self) -> str:
        """How the log and the replies name one run: `build` (Jenkins) or `run` (GitHub Actions)."""

    def stop(self, pr_number: int) -> Stopping:
        """Stop the pull request's runs that have not ended, each one's status "killed by /bot kill"."""

    def runs(self) -> list[Build]:
        """The runs of every pull request, newest first."""

    def record(self, run: Build) -> SelectionRecord | None:
        """The run record the run archived; None when it archived none ci-tool reads (a fault reading it raises)."""

    def request(self, run: Build) -> SelectionRequest | None:
        """The request the run was started with; None when it holds none ci-tool reads."""

    def number(self, run: Build) -> str:
        """The run's number as the replies write it: `#7` (a Jenkins build) or `7`."""

    def link(self, run: Build) -> str:
        """The run linked, where a reply says a status was carried from it."""


class EngineRuns(PullRuns, FollowedRuns, Protocol):
    """One engine's runs, as /bot kill, reuse-pipeline and --wait reach them."""


@dataclass(frozen=True)
class OnEngine:
    """One engine, opened for a dispatch (its history open): what /bot run, kill and reuse-pipeline do there."""

    runs: EngineRuns
    run: Callable[[Decision, RunPlan, PullRequest, str], Started]  # /bot run (run.py, actions_run.py)
    wait: bool  # --wait: /bot run follows the run it started to its end (follow.py)
    output: str  # the GitHub outputs naming the run /bot run started: `build` (build=N, build_url=URL) or `run`


def kill(runs: PullRuns, replies: Replies, pr_number: int, reply: str) -> None:
    """/bot kill: see the module docstring."""
    stopping = runs.stop(pr_number)
    replies.echo(f"killed: {stopping.counted}")
    replies.comment(with_lines(reply, stopping.lines, none=NOTHING_RUNNING))


def reuse(runs: PullRuns, replies: Replies, pr: PullRequest, reply: str, head: HeadInputs, *,
          may_skip: bool) -> None:  # fmt: skip
    """/bot reuse-pipeline (`head`: where the reply was planned: the run's request is planned there too)."""
    lines = runs.stop(pr.number).lines
    noun, named = runs.noun, runs.noun.capitalize()

    def answer(*said: str) -> None:
        replies.comment(with_lines(reply, [*lines, *said], none=""))

    passing = [r for r in runs.runs() if r.parameters.get("PR_NUMBER") == str(pr.number)
               and r.result is BuildResult.SUCCESS]  # fmt: skip
    if not passing:
        replies.echo(f"reuse: no passing {noun} of this pull request")
        answer(f"No passing {noun} of this pull request to reuse: comment `/bot run`.")
        return
    previous = passing[0]
    title = f"{named} [{runs.number(previous)}]({previous.url})"
    record = runs.record(previous)
    request = runs.request(previous)
    why = why_not_reusable(record, plan_at_head(head, request).selection.names if request is not None else None)
    if record is None or why is not None:
        why = why or "archived no readable selection"
        replies.echo(f"reuse: {noun} {previous.number} {why}")
        answer(f"{title} {why}: comment `/bot run` to test this commit.")
        return
    sha = record.head or previous.parameters.get("HEAD_SHA", "")
    other_code = _other_code(replies, pr, sha)
    if other_code and not may_skip:  # carrying green to code nothing tested is what /bot skip does
        replies.echo(f"reuse: {noun} {previous.number} {other_code}; the commenter may not /bot skip")
        answer(f"{title} {other_code}: reusing it for other code needs the `kill_skip` permission, as `/bot skip` "
               "does. Comment `/bot run` to test this commit.")  # fmt: skip
        return
    statuses = replies.github.statuses(pr.repository, sha) if sha else {}
    reused = [s for s in statuses.values() if s.target_url == previous.url and s.state is StatusState.SUCCESS]
    for status in reused:
        replies.status(pr.head_sha, carried(status, previous))
    replies.echo(f"reused: {noun} {previous.number}: {len(reused)} status(es) carried to {pr.head_sha[:12]}")
    carried_lines = [f"Carried {code(s.context)} from {runs.link(previous)}." for s in reused]
    answer(*(carried_lines or [f"{named} {runs.number(previous)} left no status."]))


def _other_code(replies: Replies, pr: PullRequest, run_sha: str) -> str:
    """Why a run's commit holds other code than the head ("" when the git trees are the same)."""
    if not run_sha:
        return "names no commit"
    if run_sha == pr.head_sha:
        return ""
    github = replies.github
    if github.commit(pr.repository, pr.head_sha).tree_sha == github.commit(pr.repository, run_sha).tree_sha:
        return ""
    return f"tested {code(run_sha[:12])}, whose code (git tree) differs from the head {code(pr.head_sha[:12])}'s"


def why_not_reusable(record: SelectionRecord | None, now: tuple[str, ...] | None) -> str | None:
    """Why a passing run cannot stand in for the request's selection now (None: it can)."""
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
