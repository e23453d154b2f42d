"""A dispatch carried out on GitHub Actions: /bot run (actions_run.py), and the workflow's runs of the pull
request as /bot kill and reuse-pipeline reach them (pull_runs.py), with the history open and the default
branch read, whose workflow file every dispatch runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ci_tool.dispatch.actions_results import selection_artifact, selection_files
from ci_tool.dispatch.actions_trigger import cancel_pull_request
from ci_tool.dispatch.model import Build
from ci_tool.errors import DispatchError, StageError
from ci_tool.pr_bot import actions_run
from ci_tool.pr_bot.actions_services import ActionsReach, ActionsServices, mark_cancelled, run_link
from ci_tool.pr_bot.pull_runs import OnEngine, Stopping
from ci_tool.pr_bot.services import Replies
from ci_tool.stages.record import SelectionRecord
from ci_tool.stages.request import SelectionRequest, request_from_json

__all__ = ["ActionsReach", "ActionsRuns", "on_actions"]


@dataclass(frozen=True)
class ActionsRuns:
    """The workflow's runs on the default branch (a PullRuns): cancelled, their request read from the artifact
    their plan job archived beside the run record."""

    services: ActionsServices
    noun: str = "run"

    def stop(self, pr_number: int) -> Stopping:
        services = self.services
        cancelled = cancel_pull_request(services.client, services.repository, services.ref, pr_number)
        return Stopping(mark_cancelled(services, cancelled, None), f"{len(cancelled)} run(s) cancelled")

    def runs(self) -> list[Build]:
        return self.services.client.runs(self.services.repository, branch=self.services.ref)

    def record(self, run: Build) -> SelectionRecord | None:
        return actions_run.archived_record(self.services, run)

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


@contextmanager
def on_actions(reach: ActionsReach, replies: Replies) -> Iterator[OnEngine]:
    """GitHub Actions, its default branch read (a DispatchError when GitHub does not tell it) and the history
    open for the dispatch."""
    ref = reach.client.default_branch(replies.repository)
    with reach.history() as history:
        services = ActionsServices(reach.client, replies, history, reach.pace, ref, reach.report_url)
        yield OnEngine(ActionsRuns(services),
                     lambda decision, plan, pr, reply: actions_run.run(services, decision, plan, pr, reply,
                                                                       wait=reach.wait),
                     output="run")  # fmt: skip
