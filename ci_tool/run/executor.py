"""Executors: what runs a planned stage. One interface, two kinds (stages/executors.py names them):

    local  this machine: ci_tool.run.jobs (pytest, or a non-test stage's job), one stage at a time; with
           `--jobs N` (N > 1) ci_tool.run.stage_pool runs several side by side, each in a process of its own
    slurm  one batch job per stage on a cluster: every stage starts at once (ci_tool.run.slurm_executor)

A session (session.py) plans each stage and hands it over as a ReadyStage; the executor reports each
stage as it ends: its StageResult, or a StageOutcome for a stage that never ran (a refused submission,
a stage cancelled by fail-fast).

    can_start(name)  room for that stage now (always, when none runs)
    start(ready)     start it
    running()        stages started and not reported yet
    next_finished()  the next stage to end (waits); only while running() > 0
    cancel(reason)   stop the started stages: each ends skipped, with `reason` (fail-fast)
    mismatch(name)   why this executor cannot run a stage, or None

Ctrl-C (and SIGTERM, ci_tool/interrupts.py) reaches the running stage as KeyboardInterrupt: the local runner stops
its pytest process, the Slurm executor scancels the run's jobs; either way the stages end interrupted,
with what finished.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from ci_tool.run.invocation import RunSettings
from ci_tool.run.jobs import run_job
from ci_tool.run.pipeline import StageOutcome, runner_mismatch
from ci_tool.run.process import EventSink
from ci_tool.run.resources import device_variables, gpu_devices
from ci_tool.run.stage_runner import StageResult
from ci_tool.stages.names import StageName
from ci_tool.stages.query import QueryValue
from ci_tool.stages.stage_plan import StagePlan

Finished = StageResult | StageOutcome  # a stage that ran, or one that never did


@dataclass(frozen=True)
class ReadyStage:
    """A planned stage ready to start: its plan, where its results go, and what a scheduler asks for."""

    plan: StagePlan
    settings: RunSettings
    platform: str = ""  # the catalog platform (a Slurm partition or auto:<pool>); "" when unknown
    timeout_minutes: int | None = None  # the stage's limit (a Slurm job's --time); None: no limit asked


class StageExecutor(Protocol):
    """What runs planned stages (this module's docstring gives the life cycle); stages/executors.py's
    Executor names the kinds."""

    def mismatch(self, name: StageName) -> str | None: ...

    def can_start(self, name: StageName) -> bool: ...

    def start(self, ready: ReadyStage) -> None: ...

    def running(self) -> int: ...

    def next_finished(self) -> Finished: ...

    def cancel(self, reason: str) -> None: ...


class LocalExecutor:
    """This machine: `start` runs the stage to its end, `next_finished` reports it."""

    def __init__(self, sysinfo: Mapping[str, QueryValue], *, on_event: EventSink | None = None) -> None:
        self.sysinfo = sysinfo
        self.on_event = on_event
        self.done: list[StageResult] = []
        self.devices = gpu_devices(sysinfo, os.environ)

    def mismatch(self, name: StageName) -> str | None:
        return runner_mismatch(name, self.sysinfo)

    def can_start(self, name: StageName) -> bool:
        return not self.done

    def start(self, ready: ReadyStage) -> None:
        settings = ready.settings
        if ready.plan.name.is_cpu:  # its tests never reach for a GPU, as beside other stages (stage_pool.py)
            settings = replace(settings, variables={**settings.variables, **device_variables((), self.devices)})
        self.done.append(run_job(ready.plan, settings, on_event=self.on_event))

    def running(self) -> int:
        return len(self.done)

    def next_finished(self) -> Finished:
        return self.done.pop(0)

    def cancel(self, reason: str) -> None:
        """Nothing runs between two stages here."""
