"""--wait: a started build or workflow run followed to its end, the CI report posted and the final status set
(never success without a test result to show for it), one flow for every engine; what differs between a
Jenkins build (its L0_Test builds) and a GitHub Actions run (its artifacts) is the engine's FollowedRuns
(on_jenkins.py, on_actions.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from ci_tool.bot.reply import shorten
from ci_tool.bot.run_plan import RunPlan
from ci_tool.bot.status import final, unfollowed, untested
from ci_tool.dispatch.model import Build, StatusState
from ci_tool.errors import DispatchError
from ci_tool.history.flakiness import known_flaky
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import BuildResult
from ci_tool.pr_bot.ci_report import FinishedBuild, passed_after_retries, render_ci_report, totals
from ci_tool.pr_bot.ci_report import ci_report as build_ci_report
from ci_tool.pr_bot.services import Replies
from ci_tool.report.links import ReportUrl
from ci_tool.stages.selection_request import SelectionRequest


class Reach(Protocol):
    """What following reaches besides the engine (services.Services, actions_services.ActionsServices)."""

    @property
    def replies(self) -> Replies: ...

    @property
    def history(self) -> HistoryStore: ...

    @property
    def report_url(self) -> ReportUrl | None: ...

    @property
    def wall(self) -> Callable[[], float]: ...


class FollowedRuns(Protocol):
    """One engine's started runs, as --wait follows them."""

    @property
    def noun(self) -> str:
        """How the log and the replies name one run: `build` (Jenkins) or `run` (GitHub Actions)."""

    @property
    def services(self) -> Reach: ...

    @property
    def retried_runs_fail(self) -> bool:
        """Whether the engine fails a run whose lost runner's job passed on a retry (GitHub Actions: a lost
        runner's job stays failed): such a run is unstable, as Jenkins says of its builds itself."""

    def heading(self, run: Build) -> str:
        """The run linked, as the CI report's heading names it: `[L0_MergeRequest #7](URL)`."""

    def context(self, request: SelectionRequest) -> str:
        """The status context a run of the request posts on."""

    def wait(self, run: Build, unread: list[str]) -> Build:
        """The run once it ended (a DispatchError when it cannot be followed to its end)."""

    def finished(self, run: Build, unread: list[str]) -> FinishedBuild:
        """The ended run with its test results, run record and the newer run that stopped it; what cannot be
        read goes to `unread`."""

    def more_at(self, run: Build) -> str:
        """Where the whole story is when the CI report is cut to fit a comment."""

    def no_tests(self, finished: FinishedBuild) -> str:
        """What is missing when a run that ended well has no test result: `no test report`."""


def follow(runs: FollowedRuns, started: Build, plan: RunPlan, *, login: str, command: str) -> None:
    """--wait: the run to its end, then the CI report and the final status (unless a newer run owns it).
    Whatever part of the run cannot be read (a downstream job, a test report, the run record, the log), the
    report says so and the status is still the run's; a run that cannot be followed to its end at all gets an
    error status and a comment before the error."""
    services, noun = runs.services, runs.noun
    replies = services.replies
    context = runs.context(plan.selection.request)
    sha = started.parameters.get("HEAD_SHA", "")
    unread: list[str] = []
    try:
        ended = runs.wait(started, unread)
    except DispatchError as error:
        replies.comment(f"## CI report: {runs.heading(started)} **NOT FOLLOWED**\n\n"
                        f"@{login}, the bot could not follow the {noun} to its end: {error}\n")  # fmt: skip
        replies.status(sha, unfollowed(context, started))
        raise
    finished = runs.finished(ended, unread)
    replies.echo(f"ended: {noun} {ended.number}: {ended.result.value if ended.result else 'no result'}")
    for what in unread:
        replies.err(f"warning: could not read {what}")
    known = known_flaky(services.history, before=services.wall())  # measured on this history's runs
    report = build_ci_report(finished, plan, command=command, known=known)
    if runs.retried_runs_fail and passed_after_retries(finished, report):
        ended = replace(ended, result=BuildResult.UNSTABLE)
        finished = replace(finished, build=ended)
        report = build_ci_report(finished, plan, command=command, known=known)
    html = services.report_url.for_build(ended.job, ended.number, ended.url) if services.report_url else None
    replies.comment(shorten(render_ci_report(finished, plan, report, login=login, html_report=html),
                            more_at=runs.more_at(ended)))  # fmt: skip
    sha = ended.parameters.get("HEAD_SHA") or sha
    current = replies.current(sha, context)
    if current is not None and current.target_url != ended.url:  # a newer run's, or a reuse
        replies.echo(f"status {context!r} on {sha[:12]} left as it is: {current.description} (not this {noun}'s)")
        return
    status = final(context, ended, totals(report), unread=bool(unread))
    if status.state is StatusState.SUCCESS and not finished.cases:  # green needs evidence
        status = untested(context, ended, runs.no_tests(finished))
    replies.status(sha, status)
