"""A dispatch carried out on GitHub Actions: /bot run (actions_run.py), and the workflow's runs as /bot kill and
reuse-pipeline (pull_runs.py) and --wait (follow.py) reach them, their results read from the artifacts their
jobs archived; with the history open and the default branch read, whose workflow file every dispatch runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from ci_tool.bot.status import actions_context_for
from ci_tool.dispatch.actions import Artifact
from ci_tool.dispatch.actions_results import result_artifacts, selection_artifact, selection_files, test_cases
from ci_tool.dispatch.actions_trigger import cancel_pull_request, wait_for_end
from ci_tool.dispatch.model import Build
from ci_tool.errors import DispatchError, StageError
from ci_tool.layout import ACTIONS_RESULTS_ARTIFACT_PREFIX
from ci_tool.outcomes import BuildResult
from ci_tool.pr_bot import actions_run
from ci_tool.pr_bot.actions_services import ActionsReach, ActionsServices, mark_cancelled, run_link
from ci_tool.pr_bot.ci_report import Downstream, FinishedBuild
from ci_tool.pr_bot.pull_runs import OnEngine, Stopping
from ci_tool.pr_bot.services import Replies
from ci_tool.stages.record import SelectionRecord, read_record
from ci_tool.stages.selection_request import SelectionRequest, request_from_json

__all__ = ["ActionsReach", "ActionsRuns", "on_actions"]


@dataclass(frozen=True)
class ActionsRuns:
    """The workflow's runs on the default branch (PullRuns and FollowedRuns): cancelled, their request and run
    record read from the artifact their plan job archived, each stage's test results from its own artifact."""

    services: ActionsServices
    noun: str = "run"
    retried_runs_fail: bool = True  # a lost runner's job stays failed on GitHub whatever its retry did

    def stop(self, pr_number: int) -> Stopping:
        services = self.services
        cancelled = cancel_pull_request(services.client, services.repository, services.ref, pr_number)
        return Stopping(mark_cancelled(services, cancelled, None), f"{len(cancelled)} run(s) cancelled")

    def runs(self) -> list[Build]:
        return self.services.client.runs(self.services.repository, branch=self.services.ref)

    def record(self, run: Build) -> SelectionRecord | None:
        return archived_record(self.services, run)

    def request(self, run: Build) -> SelectionRequest | None:
        client, repository = self.services.client, self.services.repository
        found = selection_artifact(client.artifacts(repository, run.number))
        if found is None:
            return None
        _, data = selection_files(client, repository, found)
        try:
            return request_from_json(data) if data is not None else None
        except (StageError, DispatchError):
            return None

    def number(self, run: Build) -> str:
        return str(run.number)

    def link(self, run: Build) -> str:
        return run_link(run)

    def heading(self, run: Build) -> str:
        return run_link(run)

    def context(self, request: SelectionRequest) -> str:
        return actions_context_for(request)

    def wait(self, run: Build, unread: list[str]) -> Build:
        return wait_for_end(self.services.client, self.services.repository, run, self.services.pace)

    def finished(self, run: Build, unread: list[str]) -> FinishedBuild:
        record, stages = _read_artifacts(self.services, run, unread)
        return FinishedBuild(run, stages, _newer(self.services, run), record, tuple(unread))

    def more_at(self, run: Build) -> str:
        return run.url

    def no_tests(self, finished: FinishedBuild) -> str:
        return "no test results"


@contextmanager
def on_actions(reach: ActionsReach, replies: Replies) -> Iterator[OnEngine]:
    """GitHub Actions, its default branch read (a DispatchError when GitHub does not tell it) and the history
    open for the dispatch."""
    ref = reach.client.default_branch(replies.repository)
    with reach.history() as history:
        services = ActionsServices(reach.client, replies, history, reach.pace, ref, reach.report_url)
        yield OnEngine(ActionsRuns(services), partial(actions_run.run, services), wait=reach.wait, output="run")


def _read_artifacts(services: ActionsServices, run: Build, unread: list[str]) -> tuple[SelectionRecord | None,
                                                                                         Downstream]:  # fmt: skip
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
