"""What every step of a dispatch on GitHub Actions reaches: the Actions client (on the GitHub client the
replies go through), the history holding the dispatch ledger, the pace of its polls, and the repository's
default branch, whose workflow file every dispatch runs (trusted: a pull request cannot change it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ci_tool.bot.status import ACTIONS_CUSTOM_CONTEXT, ACTIONS_FULL_CONTEXT, KILLED_BY_KILL, KILLED_BY_NEWER
from ci_tool.dispatch.actions import ActionsClient
from ci_tool.dispatch.model import Build, Status, StatusState
from ci_tool.dispatch.trigger import Pace
from ci_tool.history.store import HistoryStore
from ci_tool.pr_bot.services import Echo, Replies
from ci_tool.report.links import ReportUrl

ACTIONS_CONTEXTS = (ACTIONS_FULL_CONTEXT, ACTIONS_CUSTOM_CONTEXT)


@dataclass(frozen=True)
class ActionsReach:
    """What `bot handle` hands a dispatch on GitHub Actions (the history opened for the dispatch)."""

    client: ActionsClient
    history: Callable[[], HistoryStore]
    pace: Pace
    report_url: ReportUrl | None
    wait: bool


@dataclass(frozen=True)
class ActionsServices:
    client: ActionsClient
    replies: Replies
    history: HistoryStore
    pace: Pace
    ref: str  # the default branch: the workflow file dispatched is the one it holds
    report_url: ReportUrl | None = None
    wall: Callable[[], float] = field(default=time.time, compare=False)

    @property
    def echo(self) -> Echo:
        return self.replies.echo

    @property
    def repository(self) -> str:
        return self.replies.repository


def run_link(run: Build) -> str:
    return f"[{run.job} run {run.number}]({run.url})"


def cancelled_status(context: str, by: Build | None) -> Status:
    """The status of a run cancelled by a newer one (`by`, linked) or by `/bot kill` (None)."""
    if by is None:
        return Status(context, StatusState.ERROR, KILLED_BY_KILL)
    return Status(context, StatusState.ERROR, f"{KILLED_BY_NEWER} (run {by.number})", by.url)


def mark_cancelled(services: ActionsServices, runs: tuple[Build, ...], by: Build | None) -> list[str]:
    """Each cancelled run's status, "killed by ...", on the context it posted on (the one whose status links
    the run: a run's name tells its request's digest, not whether it is a custom run); the reply lines."""
    reason = KILLED_BY_KILL if by is None else f"{KILLED_BY_NEWER} ({run_link(by)})"
    for run in runs:
        sha = run.parameters.get("HEAD_SHA", "")
        for context in ACTIONS_CONTEXTS:
            current = services.replies.current(sha, context) if sha else None
            if current is not None and current.target_url == run.url:
                services.replies.status(sha, cancelled_status(context, by))
    return [f"- cancelled {run_link(run)}: {reason}" for run in runs]
