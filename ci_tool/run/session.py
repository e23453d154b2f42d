"""A recorded run: a run id, its results folder, the pipeline of stages on an executor (this machine, or
one Slurm job per stage), the history.

    .ci-tool/runs/<run id>/<stage>/   one results folder per stage (see stage_runner); a stage that reuses
                                      tests of an earlier run gets its own waives.txt there: the waives
                                      file with a `SKIP (Reused from run R)` line per reused test
    .ci-tool/runs/<run id>/report.md  the CI report of the run (its HTML page, `--html-report`, renders the
                                      same value: SessionResult.report)
    history                           the run with its code and scope, each stage (also those that waited,
                                      were skipped or were reused), each test

A stage that cannot be planned (an empty render, a bad shard index) fails with the error as its reason,
and the pipeline goes on (or stops, with fail-fast), as a CI stage would.
"""

from __future__ import annotations

import contextlib
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

from ci_tool import gitinfo, sysinfo
from ci_tool.atomic import write_text_atomically
from ci_tool.errors import CiToolError, RunError
from ci_tool.gitinfo import CodeVersion
from ci_tool.history.locator import History
from ci_tool.history.perf_results import PerfResult
from ci_tool.history.queries import TREND_SAMPLES
from ci_tool.history.recorder import RunRecorder
from ci_tool.history.reuse_sources import ReusedTests
from ci_tool.history.store import BUSY_TIMEOUT_MS, RunRecord
from ci_tool.history.touch_table import TouchRow, WholeStage, read_touch_files, stamped
from ci_tool.layout import TEST_TIMEOUT_SECONDS
from ci_tool.outcomes import COUNTED, RunState, StageState, TestOutcome
from ci_tool.perf import handoff
from ci_tool.perf.learning import quiet_needed_if_read, unbaselined_gpus
from ci_tool.report.model import CiReport, build_report, failed_test_ids
from ci_tool.report.report_markdown import render_markdown
from ci_tool.run import pipeline, recording, results_folder, stage_inputs
from ci_tool.run.catalog_order import CatalogOrder
from ci_tool.run.executor import LocalExecutor, ReadyStage, StageExecutor
from ci_tool.run.flaky import FlakySignature
from ci_tool.run.invocation import RunSettings
from ci_tool.run.progress import Progress
from ci_tool.run.resources import Slots, gpu_devices
from ci_tool.run.stage_pool import StagePool
from ci_tool.run.stage_runner import StageResult
from ci_tool.stages.catalog import Stage
from ci_tool.stages.executors import Executor
from ci_tool.stages.names import StageName
from ci_tool.stages.planner import Planner
from ci_tool.stages.query import QueryValue
from ci_tool.stages.stage_plan import StagePlan
from ci_tool.text_file import read_text


@dataclass(frozen=True)
class SessionConfig:
    rootdir: Path  # pytest runs here; test ids are relative to it
    results_root: Path  # .ci-tool/runs
    history: History
    sysinfo: Mapping[str, QueryValue]
    flaky_signatures: tuple[FlakySignature, ...]
    test_timeout_seconds: int = TEST_TIMEOUT_SECONDS
    rerun_flaky: bool = True
    detailed_log: bool = False  # pytest streams all output (`--detailed-log`)
    output_dir: Path | None = None  # one stage's results folder when given (CI's `--output-dir`)
    history_busy_timeout_ms: int = BUSY_TIMEOUT_MS
    executor: Executor = Executor.LOCAL  # what runs the stages (executor.py)
    slurm_partition: str | None = None  # every Slurm job's partition (else each stage's platform's pool)
    record_touches: bool = False  # which test ran which file, into the history (`--record-touches`)
    jobs: int = 1  # stages side by side on this machine (`--jobs`; run/resources.py): 1 runs one at a time
    parallel_families: frozenset[str] = frozenset()  # those with `parallel_tests` (the catalog's)
    stage_cores: int = 1  # the test processes of a stage of such a family, here (run/resources.stage_cores)

    def workers(self, name: StageName) -> int:
        """How many processes run the stage's tests at once: `stage_cores` for a stage of a parallel family
        on this machine, else one (a perf stage measures alone; a Slurm job is sized by its partition)."""
        parallel = name.family in self.parallel_families and not name.policy.runs_alone
        return self.stage_cores if parallel and self.executor is Executor.LOCAL else 1

    def stage_settings(self, name: StageName, *, results_dir: Path, run_id: str, preview: bool = False) -> RunSettings:
        """How a stage of this session runs: the one place a stage's RunSettings is made. A Slurm job spans
        the stage name's node count (one srun per process across them); a stage here runs on one node. A
        `preview` (a dry run) shows the commands alone: no flaky signatures or touch recording."""
        return RunSettings(
            rootdir=self.rootdir,
            results_dir=results_dir,
            run_id=run_id,
            test_timeout_seconds=self.test_timeout_seconds,
            flaky_signatures=() if preview else self.flaky_signatures,
            rerun_flaky=self.rerun_flaky,
            detailed_log=self.detailed_log,
            nodes=name.node_count if self.executor is Executor.SLURM else 1,
            record_touches=not preview and self.record_touches,
            workers=self.workers(name),
        )


@dataclass(frozen=True)
class PlannedStage:
    """A stage to run and how to plan it; planned only when it starts (a skipped stage never renders).
    `reused_tests`: tests that passed in an earlier run of the same code: they skip."""

    name: StageName
    plan: Callable[[], StagePlan]
    platform: str = ""  # the catalog platform (a runner label, Slurm partition or auto:<pool>)
    timeout_minutes: int | None = None  # the catalog timeout (a Slurm job's --time)
    reused_tests: ReusedTests | None = None
    inputs: Callable[[], str] = lambda: ""  # the digest of its inputs (stage_inputs.py): what reuse matches


def catalog_stages(
    stages: Sequence[Stage], *, planner: Planner, reused_tests: Mapping[str, ReusedTests] | None = None
) -> list[PlannedStage]:
    """Catalog stages, each planned by `planner` when it starts."""
    declared = stage_inputs.declared_planner(planner)
    return [
        PlannedStage(
            stage.name,
            functools.partial(planner.stage, stage),
            stage.platform,
            stage.timeout_minutes,
            (reused_tests or {}).get(stage.name.name),
            inputs=stage_inputs.lazy_digest(functools.partial(declared.stage, stage), stage.platform),
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
    report: CiReport  # the run's report, built once from its own records: report.md and the HTML render it
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
    """Run the servable stages of `stages` on the configured executor (the reused ones are recorded, not
    run), record everything, and write the run's CI report."""
    run_id = run_id or new_run_id()
    identity = identity or RunIdentity()
    code = identity.code
    # `--output-dir` (one stage, as CI runs it) is the whole run's folder: nothing goes to RESULTS_ROOT then.
    run_dir = config.output_dir or config.results_root / run_id
    # Before the run is recorded: a run that cannot keep its results never starts.
    make_results_folder(run_dir)
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
        runner = _Runner(
            run_id, run_dir, config, store, progress, reused_stages=identity.reused_stages, code=code, stages=stages
        )

        def not_run(outcome: pipeline.StageOutcome) -> None:
            runner.record_not_run(outcome)

        ran: pipeline.PipelineResult | None = None
        try:  # Ctrl-C outside a pytest process (while planning, say) still closes the run
            ran = pipeline.run_pipeline(
                stages,
                mismatch=runner.executor.mismatch,
                fail_fast=fail_fast,
                runner=runner,
                not_run=not_run,
                reused=identity.reused_stages,
            )
        except BaseException:  # nothing the run started keeps running (a Slurm job submitted before Ctrl-C)
            with contextlib.suppress(CiToolError):
                runner.executor.cancel("interrupted")
            if isinstance(runner.executor, StagePool):  # its stages finish on a cancel: they stop here
                runner.executor.stop()
            raise
        finally:
            runner.order.flush()
            state = ran.state if ran is not None else RunState.INTERRUPTED
            store.finish_run(run_id, state=state, finished_at=time.time())
        run, stage_records, tests = store.report_input()
        known = store.known_flaky(before=run.started_at, test_ids=failed_test_ids(tests))
        perf = store.perf_results()
        needed = quiet_needed_if_read(store.store, unbaselined_gpus(perf), progress.warning)
        reused = store.reused_records(stage_records)
        trends = store.perf_trends(perf, limit=TREND_SAMPLES)
        built = build_report(run, stage_records, tests, perf=perf, known=known, quiet_needed=needed,
                             reused_from=reused, perf_trends=trends)  # fmt: skip
        markdown = render_markdown(built)
    kept = results_folder.write_results(
        run_dir, lambda line: {"report.md": markdown}, run_id=run_id, stage="", what="the CI report"
    )
    if kept is not None:
        progress.warning(kept.line)
    return SessionResult(run_id, ran.state, tuple(runner.results), ran, markdown, run_dir, built, store.unrecorded)


def make_executor(config: SessionConfig, run_id: str, progress: Progress) -> StageExecutor:
    """The executor `config` names, for one run: on this machine one stage at a time (`jobs` 1), else a pool."""
    if config.executor is Executor.SLURM:
        from ci_tool.run.slurm_executor import SlurmExecutor  # the local path never imports Slurm's

        return SlurmExecutor(run_id=run_id, partition=config.slurm_partition, note=progress.note)
    if config.jobs > 1:
        slots = Slots(config.jobs, gpu_devices(config.sysinfo, os.environ), cores=sysinfo.usable_cores())
        return StagePool(
            config.sysinfo, slots, on_event=progress.stage_event, on_tick=progress.tick, workers=config.workers
        )
    return LocalExecutor(config.sysinfo, on_event=progress.event)


class _Runner:
    """The pipeline's stage runner: plans each stage when it starts, hands it to the executor, and records
    each stage as it ends (history and progress)."""

    def __init__(
        self,
        run_id: str,
        run_dir: Path,
        config: SessionConfig,
        store: RunRecorder,
        progress: Progress,
        *,
        reused_stages: Mapping[str, str],
        code: CodeVersion | None = None,
        stages: Sequence[PlannedStage] = (),
    ) -> None:
        self.run_id, self.run_dir, self.config, self.store, self.progress = run_id, run_dir, config, store, progress
        self.reused_stages = reused_stages  # stage -> the run it passed in
        self.code = code  # what the touch records are stamped with
        self.names: dict[str, StageName] = {}  # the started stages' parsed names
        self.planned = {stage.name.name: stage for stage in stages}  # by name: their inputs' digests
        self.executor = make_executor(config, run_id, progress)
        self.unplanned: list[pipeline.StageOutcome] = []  # stages that failed to plan, not reported yet
        self.order = CatalogOrder([stage.name.name for stage in stages])  # the history's order of the stages
        self.results: list[StageResult] = []

    def can_start(self, name: StageName) -> bool:
        return not self.unplanned and self.executor.can_start(name)

    def running(self) -> int:
        return len(self.unplanned) + self.executor.running()

    def cancel(self, reason: str) -> None:
        self.executor.cancel(reason)

    def start(self, stage: PlannedStage) -> None:
        try:
            plan = stage.plan()
            folder = self.config.output_dir or self.run_dir / plan.name.name
            if stage.reused_tests:
                plan = _with_reused_tests(plan, stage.reused_tests, folder)
        except CiToolError as error:
            self.unplanned.append(
                pipeline.StageOutcome(stage.name.name, StageState.FAILED, f"cannot plan the stage: {error}")
            )
            return
        self.names[plan.name.name] = plan.name
        self.progress.stage_started(plan.name.name, len(plan.lines))
        settings = self.config.stage_settings(plan.name, results_dir=folder, run_id=self.run_id)
        settings = replace(settings, perf_snapshot=self._perf_snapshot(folder))
        self.executor.start(ReadyStage(plan, settings, stage.platform, stage.timeout_minutes))

    def next_finished(self) -> pipeline.StageOutcome:
        finished = self.unplanned.pop(0) if self.unplanned else self.executor.next_finished()
        if isinstance(finished, pipeline.StageOutcome):
            self.record_not_run(finished)
            return finished
        self.results.append(finished)
        self.order.add(finished.stage, functools.partial(self._record, finished, time.time()))
        self.progress.stage_finished(
            finished.stage, finished.state, finished.duration_seconds, finished.counts, finished.reason
        )
        return pipeline.StageOutcome(finished.stage, finished.state, finished.reason, ran=True)

    def _record(self, finished: StageResult, ended_at: float) -> None:
        """A stage that ran, into the history: its stage and test rows, its perf results, its touch records."""
        tests = [recording.to_test_record(test) for test in finished.tests]
        record = recording.to_stage_record(self.run_id, finished, inputs=self._inputs(finished.stage))
        self.store.record_stage(record, tests, recorded_at=ended_at)
        self.store.record_perf(self._perf_handed_back(finished, ended_at))
        if self.config.record_touches:
            touches, whole = self._touch_rows(finished), _whole_stage(finished, self.names[finished.stage])
            self.store.record_touches(self.run_id, touches, recorded_at=ended_at, whole_stage=whole)

    @functools.cached_property
    def perf_snapshot_rows(self) -> list[PerfResult] | None:
        """What the run's perf cases read of the history, read once (None: the history cannot be read)."""
        return self.store.perf_snapshot(window=handoff.SNAPSHOT_WINDOW)

    def _perf_snapshot(self, folder: Path) -> Path | None:
        """The stage's copy of what its perf cases read (they never hold the history: perf/handoff.py)."""
        rows = self.perf_snapshot_rows
        if rows is None:
            return None
        path = folder / handoff.SNAPSHOT_FILE
        try:
            make_results_folder(folder)
            handoff.write_snapshot(path, rows)
        except CiToolError as error:  # the stage says so when its folder refuses its results too
            self.progress.warning(f"{error}; the perf cases gate without the history's post-merge results")
            return None
        return path

    def _perf_handed_back(self, finished: StageResult, ended_at: float) -> list[PerfResult]:
        """The perf results the stage's processes handed back, as this run's and this stage's (perf/handoff.py)."""
        files = sorted((finished.results_dir / "parts").glob(f"*{handoff.RESULTS_SUFFIX}"))
        code = self.code
        stamp = handoff.StageStamp(
            run_id=self.run_id,
            stage=finished.stage,
            post_merge=self.names[finished.stage].post_merge,
            commit=code.commit if code is not None else "",
            started_at=finished.started_at,
            ended_at=ended_at,
        )
        handed = handoff.read_results(files, stamp)
        for refused in handed.refused:
            self.progress.warning(f"a perf result of {finished.stage} is not recorded: {refused}")
        return list(handed.rows)

    def _touch_rows(self, finished: StageResult) -> list[TouchRow]:
        """The stage's touch records, stamped with its name, GPU type and the run's commit (history/touch_table.py)."""
        touches = read_touch_files(sorted((finished.results_dir / "parts").glob("*.touches.json")))
        code = self.code
        return stamped(
            touches,
            stage=finished.stage,
            gpu_type=self.names[finished.stage].gpu_type,
            commit=code.commit if code is not None else "",
            dirty=self.dirty_files,
        )

    @functools.cached_property
    def dirty_files(self) -> frozenset[str]:
        """The files the work tree changes since the run's commit: their records are stale from the start."""
        code = self.code
        if code is None or code.clean:
            return frozenset()
        return frozenset(gitinfo.changed_since(self.config.rootdir, code.commit))

    def _inputs(self, name: str) -> str:
        """The digest of a stage's inputs ('' for a stage not among the run's: never reused)."""
        planned = self.planned.get(name)
        return planned.inputs() if planned is not None else ""

    def record_not_run(self, outcome: pipeline.StageOutcome) -> None:
        reused_from = self.reused_stages.get(outcome.name)
        inputs = self._inputs(outcome.name) if reused_from else ""  # a reused stage passes them on
        record = recording.to_not_run_record(self.run_id, outcome, reused_from=reused_from, inputs=inputs)
        self.order.add(outcome.name, functools.partial(self.store.record_stage, record, recorded_at=time.time()))
        self.progress.stage_not_run(outcome.name, outcome.state, outcome.reason)


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


def _whole_stage(finished: StageResult, name: StageName) -> WholeStage | None:
    """Every test of a stage that ran whole: not narrowed by change-based selection, not interrupted, every file
    collected (a file that failed to import has tests no result names)."""
    if name.cbts or finished.state == StageState.INTERRUPTED or finished.uncollected:
        return None
    return WholeStage(finished.stage, name.gpu_type, frozenset(test.first.nodeid for test in finished.tests))
