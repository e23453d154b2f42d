"""The posts a dispatch makes on one pull request, and what every step of a dispatch reaches (Jenkins,
the job, the history, the pace)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ci_tool.bot.reply import shorten, stopped_lines
from ci_tool.bot.status import KILLED_BY_KILL, KILLED_BY_NEWER, context_for, killed
from ci_tool.dispatch.github import Claim, GitHubClient
from ci_tool.dispatch.jenkins import JenkinsClient
from ci_tool.dispatch.model import Build, Status
from ci_tool.dispatch.trigger import Pace, Stopped
from ci_tool.errors import DispatchError, StageError
from ci_tool.history.store import HistoryStore
from ci_tool.layout import TEST_JOB
from ci_tool.pr_bot.settings import Echo
from ci_tool.report.links import ReportUrl
from ci_tool.stages.selection_request import SelectionRequest, request_from_json


@dataclass
class Replies:
    """Posts on one pull request; a refused post is a warning and counts as a failure (exit 1)."""

    github: GitHubClient
    repository: str
    number: int
    echo: Echo  # what the dispatch did, for the log
    err: Echo  # warnings
    failures: int = 0
    claims: dict[int, Claim | None] = field(default_factory=dict)  # by comment: this handling's claim

    def _warn(self, error: DispatchError) -> None:
        self.failures += 1
        self.err(f"warning: {error}")

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
        """The comment's claim (None when GitHub refused the reaction: the handling goes on unclaimed), asked
        once per handling: a project running both engines dispatches on each under the one claim."""
        if comment_id not in self.claims:
            try:
                self.claims[comment_id] = self.github.claim(self.repository, comment_id)
            except DispatchError as error:
                self._warn(error)
                self.claims[comment_id] = None
        return self.claims[comment_id]

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
class JenkinsReach:
    """What a /bot run, kill or reuse-pipeline reaches besides GitHub: Jenkins and the job it triggers, the
    history holding the dispatch ledger (opened for the dispatch), the pace of its polls, and --wait."""

    client: JenkinsClient
    job: str
    history: Callable[[], HistoryStore]
    pace: Pace
    report_url: ReportUrl | None
    wait: bool


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
    def echo(self) -> Echo:
        return self.replies.echo

    @property
    def test_job(self) -> str:
        """L0_Test beside the triggered job (in its folder)."""
        folder = self.job.rpartition("/")[0]
        return f"{folder}/{TEST_JOB}" if folder else TEST_JOB


def request_of(parameters: Mapping[str, str]) -> SelectionRequest | None:
    """The request a build (or queued item) was triggered with, None when it holds none ci-tool reads."""
    try:
        return request_from_json(json.loads(parameters.get("REQUEST", "")))
    except (ValueError, StageError):
        return None


def context_of(parameters: Mapping[str, str]) -> str:
    request = request_of(parameters)
    return context_for(request if request is not None else SelectionRequest())


def mark_stopped(services: Services, runs: Stopped, by: Build | None) -> list[str]:
    """Each stopped build's and cancelled item's status, "killed by ..." (linked to `by`); the reply lines."""
    for parameters in [item.parameters for item in runs.cancelled] + [b.parameters for b in runs.stopped]:
        services.replies.status(parameters.get("HEAD_SHA", ""), killed(context_of(parameters), by))
    reason = KILLED_BY_KILL if by is None else f"{KILLED_BY_NEWER} ([build {by.number}]({by.url}))"
    return stopped_lines(
        [(item.id, item.url) for item in runs.cancelled], [(b.number, b.url) for b in runs.stopped], reason=reason
    )
