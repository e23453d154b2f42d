"""A recorded run on this machine: a run id, its results folder, the pipeline of stages, the history.

    .ci-tool/runs/<run id>/<stage>/   one results folder per stage (see stage_runner); a stage that reuses
                                      tests of an earlier run gets its own waives.txt there: the waives
                                      file with a `SKIP (Reused from run R)` line per reused test
    .ci-tool/runs/<run id>/report.md  the CI report of the run
    history                           the run with its code and scope, each stage (also those that waited,
                                      were skipped or were reused), each test

A stage that cannot be planned (an empty render, a bad shard index) fails with the error as its reason,
and the pipeline goes on (or stops, with fail-fast), as a CI stage would.
"""

from __future__ import annotations

import datetime
import errno
import functools
import os
import secrets
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ci_tool.atomic import write_text_atomically
from ci_tool.errors import CiToolError, RunError
from ci_tool.gitinfo import CodeVersion
from ci_tool.history.recorder import RunRecorder
from ci_tool.history.reuse import ReusedTests
from ci_tool.history.store import BUSY_TIMEOUT_MS, RunRecord
from ci_tool.history.touches import read_touch_files
from ci_tool.layout import TEST_TIMEOUT_SECONDS
from ci_tool.outcomes import COUNTED, RunState, StageState, TestOutcome
from ci_tool.run import pipeline, recording, report
from ci_tool.run.flaky import FlakySignature
from ci_tool.run.invocation import RunSettings
from ci_tool.run.jobs import run_job
from ci_tool.run.progress import Progress
from ci_tool.run.stage_runner import StageResult
from ci_tool.stages.catalog import Stage
from ci_tool.stages.durations import Durations
from ci_tool.stages.names import StageName
from ci_tool.stages.plan import StagePlan, plan_catalog_stage
from ci_tool.stages.query import QueryValue
from ci_tool.testdb.model import TestDb
from ci_tool.text_file import read_text


@dataclass(frozen=True)
class SessionConfig:
    rootdir: Path  # pytest runs here; test ids are relative to it
    results_root: Path  # .ci-tool/runs
    history: Path
    sysinfo: Mapping[str, QueryValue]
    flaky_signatures: tuple[FlakySignature, ...]
    test_timeout_seconds: int = TEST_TIMEOUT_SECONDS
    rerun_flaky: bool = True
    detailed_log: bool = False  # pytest streams all output (`--detailed-log`)
    output_dir: Path | None = None  # one stage's results folder when given (CI's `--output-dir`)
    history_busy_timeout_ms: int = BUSY_TIMEOUT_MS
    record_touches: bool = False  # which test ran which file, into the history (`--record-touches`)


@dataclass(frozen=True)
class PlannedStage:
    """A stage to run and how to plan it; planned only when it starts (a skipped stage never renders).
    `reused_tests`: tests that passed in an earlier run of the same code: they skip."""

    name: StageName
    plan: Callable[[], StagePlan]
    reused_tests: ReusedTests | None = None


def catalog_stages(
    stages: Sequence[Stage],
    *,
    db: TestDb,
    durations: Durations,
    sysinfo: Mapping[str, QueryValue],
    waives_file: str | None,
    reused_tests: Mapping[str, ReusedTests] | None = None,
) -> list[PlannedStage]:
    """Catalog stages planned on this machine: each stage's query merged over its sysinfo."""
    return [
        PlannedStage(
            stage.name,
            functools.partial(
                plan_catalog_stage, stage, db=db, durations=durations, sysinfo=sysinfo, waives_file=waives_file
            ),
            (reused_tests or {}).get(stage.name.name),
        )
        for stage in stages
    ]


@dataclass(frozen=True)
class RunIdentity:
    """What a run is recorded as, beyond its command: the code it tests and its request scope (what reuse
    matches on), and the stages it reuses (stage -> the run each passed in)."""

    code: CodeVersion | None = None
    scope: str = ""
    reused_stages: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SessionResult:
    run_id: str
    state: RunState
    results: tuple[StageResult, ...]
    pipeline: pipeline.PipelineResult
    report_markdown: str
    results_dir: Path
    unrecorded: CiToolError | None = None  # the history could not take the run; its folder has it

    @property
    def counts(self) -> dict[TestOutcome, int]:
        return {k: sum(r.counts[k] for r in self.results) for k in COUNTED}

    @property
    def closing_line(self) -> str:
        """`N passed, M failed, K skipped`, and how many stages wait for a runner."""
        line = ", ".join(f"{count} {outcome}" for outcome, count in self.counts.items())
        waiting = self.pipeline.waiting
        return line + (f"; {waiting} stage{'s' if waiting != 1 else ''} waiting for a runner" if waiting else "")


def new_run_id(now: datetime.datetime | None = None) -> str:
    """`20261130-054838-3f2a`: sortable by start time, unique across concurrent runs."""
    moment = now or datetime.datetime.now(datetime.UTC)
    return f"{moment:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def run_session(
    command: str,
    stages: Sequence[PlannedStage],
    *,
    config: SessionConfig,
    fail_fast: bool,
    progress: Progress,
    run_id: str | None = None,
    identity: RunIdentity | None = None,
) -> SessionResult:
    """Run the servable stages of `stages` (the reused ones are recorded, not run), record everything, and
    write the run's CI report."""
    run_id = run_id or new_run_id()
    identity = identity or RunIdentity()
    code = identity.code
    run_dir = config.results_root / run_id
    results: list[StageResult] = []
    # Before the run is recorded: a run that cannot keep its results never starts.
    for folder in (run_dir, config.output_dir):
        if folder is not None:
            make_results_folder(folder)
    with RunRecorder(
        config.history, run_dir, busy_timeout_ms=config.history_busy_timeout_ms, warn=progress.warning
    ) as store:
        store.start_run(
            RunRecord(
                run_id,
                command,
                RunState.RUNNING,
                time.time(),
                host=socket.gethostname(),
                code_commit=code.commit if code else "",
                code_diff=code.diff_hash if code else "",
                scope=identity.scope,
            )
        )

        def run_one(stage: PlannedStage) -> pipeline.StageOutcome:
            try:
                plan = stage.plan()
                if stage.reused_tests:
                    plan = _with_reused_tests(plan, stage.reused_tests, config.output_dir or run_dir / plan.name.name)
            except CiToolError as error:
                failed = pipeline.StageOutcome(stage.name.name, StageState.FAILED, f"cannot plan the stage: {error}")
                store.record_stage(recording.to_not_run_record(run_id, failed), recorded_at=time.time())
                progress.stage_not_run(failed.name, failed.state, failed.reason)
                return failed
            progress.stage_started(plan.name.name, len(plan.lines))
            settings = RunSettings(
                rootdir=config.rootdir,
                results_dir=config.output_dir or run_dir / plan.name.name,
                run_id=run_id,
                test_timeout_seconds=config.test_timeout_seconds,
                flaky_signatures=config.flaky_signatures,
                rerun_flaky=config.rerun_flaky,
                detailed_log=config.detailed_log,
                record_touches=config.record_touches,
            )
            result = run_job(plan, settings, on_event=progress.event)
            results.append(result)
            tests = [recording.to_test_record(test) for test in result.tests]
            store.record_stage(recording.to_stage_record(run_id, result), tests, recorded_at=time.time())
            if config.record_touches:
                touches = read_touch_files(sorted((settings.results_dir / "parts").glob("*.touches.json")))
                store.record_touches(run_id, touches, recorded_at=time.time())
            progress.stage_finished(result.stage, result.state, result.duration_seconds, result.counts, result.reason)
            return pipeline.StageOutcome(result.stage, result.state, result.reason, ran=True)

        def not_run(outcome: pipeline.StageOutcome) -> None:
            record = recording.to_not_run_record(run_id, outcome, reused_from=identity.reused_stages.get(outcome.name))
            store.record_stage(record, recorded_at=time.time())
            progress.stage_not_run(outcome.name, outcome.state, outcome.reason)

        ran: pipeline.PipelineResult | None = None
        try:  # Ctrl-C outside a pytest process (while planning, say) still closes the run
            ran = pipeline.run_pipeline(
                stages,
                sysinfo=config.sysinfo,
                fail_fast=fail_fast,
                run_one=run_one,
                not_run=not_run,
                reused=identity.reused_stages,
            )
        finally:
            state = ran.state if ran is not None else RunState.INTERRUPTED
            store.finish_run(run_id, state=state, finished_at=time.time())
        markdown = report.render_markdown(report.build_report(*store.report_input()))
    write_text_atomically(run_dir / "report.md", markdown, what="the CI report")
    return SessionResult(run_id, ran.state, tuple(results), ran, markdown, run_dir, store.unrecorded)


def _with_reused_tests(plan: StagePlan, reused: ReusedTests, folder: Path) -> StagePlan:
    """The plan with its own waives file: the stage's waives and the `SKIP (Reused from run R)` lines of its
    reused tests."""
    base = read_text(plan.waives_file, name="the waives file", error=RunError) if plan.waives_file else ""
    lines = reused.waive_lines()
    if not lines:
        return plan
    text = base + ("\n" if base and not base.endswith("\n") else "") + "".join(f"{line}\n" for line in lines)
    make_results_folder(folder)
    path = folder / "waives.txt"
    write_text_atomically(path, text, what="the stage's waives")
    return replace(plan, waives_file=str(path))


def make_results_folder(path: Path) -> None:
    """Create a results folder (and its parents) that this process can write, or say why not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
    except OSError as error:
        raise RunError(
            f"cannot create the results folder {str(path)!r}: {error.strerror}",
            hint="pass --results-dir (or --output-dir) a folder you can write",
        ) from None
