"""A dispatch carried out on Jenkins: /bot run (run.py), and the job's builds as /bot kill and reuse-pipeline
(pull_runs.py) and --wait (follow.py) reach them, with the history open."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from ci_tool.bot.status import context_for
from ci_tool.dispatch.jenkins import NotFound
from ci_tool.dispatch.model import Build
from ci_tool.dispatch.trigger import stop_pull_request, wait_for_end
from ci_tool.errors import DispatchError, StageError
from ci_tool.layout import SELECTION_ARTIFACT, TEST_JOB
from ci_tool.outcomes import BuildResult
from ci_tool.pr_bot.ci_report import Downstream, FinishedBuild
from ci_tool.pr_bot.pull_runs import OnEngine, Stopping
from ci_tool.pr_bot.run import run
from ci_tool.pr_bot.services import JenkinsReach, Replies, Services, mark_stopped, request_of
from ci_tool.stages.record import SelectionRecord, read_record
from ci_tool.stages.selection_request import SelectionRequest


@dataclass(frozen=True)
class JenkinsBuilds:
    """The job's builds (PullRuns and FollowedRuns): stopped with their queued items, the request read from
    their parameters, their test results from the L0_Test builds they started."""

    services: Services
    noun: str = "build"
    retried_runs_fail: bool = False  # a stage that passed on a fresh agent makes the build unstable itself

    def stop(self, pr_number: int) -> Stopping:
        stopped = stop_pull_request(self.services.jenkins, self.services.job, pr_number)
        lines = mark_stopped(self.services, stopped, None)
        return Stopping(lines, f"{len(stopped.stopped)} build(s) stopped, {len(stopped.cancelled)} queued item(s) "
                               "cancelled")  # fmt: skip

    def runs(self) -> list[Build]:
        return self.services.jenkins.builds(self.services.job)

    def record(self, run: Build) -> SelectionRecord | None:
        return archived_record(self.services, run)

    def heading(self, run: Build) -> str:
        return f"[{run.job} #{run.number}]({run.url})"

    def context(self, request: SelectionRequest) -> str:
        return context_for(request)

    def wait(self, run: Build, unread: list[str]) -> Build:
        return wait_for_end(self.services.jenkins, run, self.services.pace, echo=self.services.echo, unread=unread)

    def finished(self, run: Build, unread: list[str]) -> FinishedBuild:
        return FinishedBuild(run, _downstream(self.services, run, unread), _newer(self.services, run),
                             archived_record(self.services, run, unread), tuple(unread))  # fmt: skip

    def more_at(self, run: Build) -> str:
        return run.console_url

    def no_tests(self, finished: FinishedBuild) -> str:
        return f"no {TEST_JOB} build" if not finished.downstream else "no test report"

    def request(self, run: Build) -> SelectionRequest | None:
        return request_of(run.parameters)

    def number(self, run: Build) -> str:
        return f"#{run.number}"

    def link(self, run: Build) -> str:
        return f"build [#{run.number}]({run.url})"


@contextmanager
def on_jenkins(reach: JenkinsReach, replies: Replies) -> Iterator[OnEngine]:
    """Jenkins, with the history open for the dispatch."""
    with reach.history() as history:
        services = Services(reach.client, replies, reach.job, history, reach.pace, reach.report_url)
        yield OnEngine(JenkinsBuilds(services), partial(run, services), wait=reach.wait, output="build")


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
