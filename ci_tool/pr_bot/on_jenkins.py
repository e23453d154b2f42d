"""A dispatch carried out on Jenkins: /bot run (run.py), and the job's builds of the pull request as /bot kill
and reuse-pipeline reach them (pull_runs.py), with the history open."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ci_tool.dispatch.model import Build
from ci_tool.dispatch.trigger import stop_pull_request
from ci_tool.pr_bot.follow import archived_record
from ci_tool.pr_bot.pull_runs import OnEngine, Stopping
from ci_tool.pr_bot.run import run
from ci_tool.pr_bot.services import JenkinsReach, Replies, Services, mark_stopped, request_of
from ci_tool.stages.record import SelectionRecord
from ci_tool.stages.request import SelectionRequest


@dataclass(frozen=True)
class JenkinsBuilds:
    """The job's builds (a PullRuns): stopped with their queued items, the request read from their parameters."""

    services: Services
    noun: str = "build"

    def stop(self, pr_number: int) -> Stopping:
        stopped = stop_pull_request(self.services.jenkins, self.services.job, pr_number)
        lines = mark_stopped(self.services, stopped, None)
        return Stopping(lines, f"{len(stopped.stopped)} build(s) stopped, {len(stopped.cancelled)} queued item(s) "
                               "cancelled")  # fmt: skip

    def runs(self) -> list[Build]:
        return self.services.jenkins.builds(self.services.job)

    def record(self, run: Build) -> SelectionRecord | None:
        return archived_record(self.services, run)

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
        yield OnEngine(JenkinsBuilds(services),
                     lambda decision, plan, pr, reply: run(services, decision, plan, pr, reply, wait=reach.wait),
                     output="build")  # fmt: skip
