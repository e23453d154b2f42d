"""--wait: a triggered build followed to its end, the CI report posted and the final status set (never
success without a test report)."""

from __future__ import annotations

from collections.abc import Mapping

from ci_tool.bot.plan import RunPlan
from ci_tool.bot.reply import shorten
from ci_tool.bot.status import context_for, final, unfollowed, untested
from ci_tool.dispatch.jenkins import NotFound
from ci_tool.dispatch.model import Build, JenkinsCase, Status, StatusState
from ci_tool.dispatch.trigger import Started, wait_for_end
from ci_tool.errors import DispatchError, StageError
from ci_tool.history.flakiness import known_flaky
from ci_tool.layout import SELECTION_ARTIFACT, TEST_JOB
from ci_tool.outcomes import BuildResult, TestOutcome
from ci_tool.pr_bot.ci_report import FinishedBuild, render_ci_report, totals
from ci_tool.pr_bot.ci_report import ci_report as build_ci_report
from ci_tool.pr_bot.services import Services
from ci_tool.stages.record import SelectionRecord, read_record


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
        build = wait_for_end(jenkins, started.build, services.pace, echo=services.echo, unread=unread)
    except DispatchError as error:
        lost = started.build
        services.replies.comment(f"## CI report: [{lost.job} #{lost.number}]({lost.url}) **NOT FOLLOWED**\n\n"
                                 f"@{login}, the bot could not follow the build to its end: {error}\n")  # fmt: skip
        services.replies.status(sha, unfollowed(context, lost))
        raise
    finished = FinishedBuild(build, _downstream(services, build, unread), _newer(services, build),
                             archived_record(services, build, unread), tuple(unread))  # fmt: skip
    services.echo(f"ended: build {build.number}: {build.result.value if build.result else 'no result'}")
    for what in unread:
        services.replies.err(f"warning: could not read {what}")
    known = known_flaky(services.history, before=services.wall())  # measured on this history's runs
    report = build_ci_report(finished, plan, command=command, known=known)
    html = services.report_url.for_build(job, build.number, build.url) if services.report_url else None
    services.replies.comment(shorten(render_ci_report(finished, plan, report, login=login, html_report=html),
                                     more_at=build.console_url))  # fmt: skip
    sha = build.parameters.get("HEAD_SHA") or sha
    current = services.replies.current(sha, context)
    if current is not None and current.target_url != build.url:  # pending, unfollowed or final: this build's
        services.echo(f"status {context!r} on {sha[:12]} left as it is: {current.description} (not this build's)")
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


def archived_record(services: Services, build: Build, unread: list[str] | None = None) -> SelectionRecord | None:
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
