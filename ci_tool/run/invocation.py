"""How a planned stage becomes pytest processes: its batches, and each process's command line and environment.

    batch     the lines one process runs: the regular lines together (batch 0, `main`), each ISOLATION
              line alone (batch K, `isolated-K`)
    attempt   first, a resume after the process died in a test, or the one rerun of known flaky failures
    sequence  the process's number within the stage (its files are named `p01-main.*`, `p02-isolated-1.*`)

`planned_invocations` is the one description of what a stage starts: `ci-tool stage show`, `ci-tool
stage run --dry-run` and the runner itself read it (the runner derives resumes and reruns from it).
Labels like `p03-main-resume` are spelled only for file names; nothing parses them back.

A stage given several cores (`RunSettings.workers`, run/resources.py) runs its regular lines under pytest-xdist,
one worker process a core (`--numprocesses`): one pytest process to ci-tool still, whose workers are its
children (the test-list plugin splits its work between them: ci_tool.run.plugin). ISOLATION lines still run
one to a process. Each worker's thread pools are sized to its one core (`WORKER_THREAD_VARIABLES`): left to
themselves, torch and the BLAS libraries size theirs to the whole host in every worker, K workers x N threads
on N cores.

A multi-node stage run inside a Slurm allocation (`RunSettings.nodes` > 1) launches each process under
`srun` across the allocation, one task per node: the task of rank 0 runs pytest, the others hold their
node for it until it ends (ci_tool.run.ranks), as TensorRT-LLM's launcher keeps its MPI workers.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ci_tool.history.locator import without_history_access
from ci_tool.layout import ORDER_PLUGIN, RANKS_LAUNCHER, TEST_LIST_PLUGIN, TEST_TIMEOUT_SECONDS
from ci_tool.perf.handoff import PERF_RESULTS_ENV, PERF_SNAPSHOT_ENV, RESULTS_SUFFIX
from ci_tool.run.flaky import FlakySignature
from ci_tool.run.order import OPTION as ORDER_OPTION
from ci_tool.run.touch_recorder import OPTION as TOUCH_OPTION
from ci_tool.run.touch_recorder import PLUGIN as TOUCH_PLUGIN
from ci_tool.stages.modes import PERF_GATE_ENV
from ci_tool.stages.stage_plan import StagePlan
from ci_tool.testdb.lines import TestLine

DETAILED_LOG_ARGS = ("-s",)  # `--detailed-log`: pytest streams all output
# How xdist hands out a stage's tests: to whichever worker is free, a few at a time, so one long test never
# holds a queue of others behind it (its `loadfile` would keep a slow file's tests on one worker).
XDIST_DISTRIBUTION = "load"


# The thread-pool sizes an xdist worker gets, one core each; a value the caller set is kept.
WORKER_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


@dataclass(frozen=True)
class RunSettings:
    rootdir: Path  # where pytest runs: test ids are relative to it
    results_dir: Path
    run_id: str
    test_timeout_seconds: int = TEST_TIMEOUT_SECONDS
    flaky_signatures: tuple[FlakySignature, ...] = ()
    rerun_flaky: bool = True
    detailed_log: bool = False
    python: str = sys.executable
    interrupt_grace_seconds: float = 10.0
    nodes: int = 1  # > 1: each process runs under srun across this many nodes of the Slurm allocation
    variables: Mapping[str, str] = field(default_factory=dict)  # the job adds to the stage's (run/jobs.py)
    perf_snapshot: Path | None = None  # what the runner read of the history for the perf cases (perf/handoff.py)
    record_touches: bool = False  # which test ran which file (run/touch_recorder.py)
    workers: int = 1  # > 1: its tests run in this many pytest-xdist processes (run/resources.py)

    def __post_init__(self) -> None:
        # Absolute from here on: a stage hands these to processes that run in other folders (pip in the
        # package-sanity work folder, pytest in the rootdir, a Slurm job on another node), where a path
        # relative to ci-tool's working directory names another file or none.
        for name in ("rootdir", "results_dir", "perf_snapshot"):
            path = getattr(self, name)
            if isinstance(path, Path) and not path.is_absolute():
                object.__setattr__(self, name, path.absolute())


class Attempt(enum.StrEnum):
    FIRST = "first"
    RESUME = "resume"  # the tests a process that died in a test had not reached
    RERUN = "rerun"  # the one rerun of failures matching a known flaky signature


@dataclass(frozen=True)
class Batch:
    """The lines one process (and its resumes and rerun) runs."""

    number: int  # 0: the regular lines; K: the K-th ISOLATION line
    lines: tuple[TestLine, ...]

    @property
    def name(self) -> str:
        return "main" if self.number == 0 else f"isolated-{self.number}"


@dataclass(frozen=True)
class PytestInvocation:
    """One pytest process of a stage (paths absolute: the child runs in the rootdir)."""

    batch: Batch
    sequence: int  # 1-based, within the stage
    list_file: Path
    stage: str
    parts_dir: Path
    test_timeout_seconds: int
    attempt: Attempt = Attempt.FIRST
    waives_file: Path | None = None
    waive_gpu: str | None = None  # the GPU token `full:GPU/` waives are scoped to
    only_nodeids: Path | None = None
    exclude_nodeids: Path | None = None
    exclude_entries: Path | None = None
    extra_args: tuple[str, ...] = ()
    variables: Mapping[str, str] = field(default_factory=dict)  # what the stage adds to the environment
    nodes: int = 1  # > 1: launched under srun, one task per node (see the module docstring)
    record_touches: bool = False
    priority_file: Path | None = None  # the tests to run first (run/order.py); None: the list's order
    workers: int = 1  # > 1: pytest-xdist runs the tests in this many processes (module docstring)

    @property
    def touches_file(self) -> Path:
        return self.parts_dir / f"{self.label}.touches.json"

    @property
    def perf_results_file(self) -> Path:
        """Where the process's perf-sanity cases hand their results back (perf/handoff.py)."""
        return self.parts_dir / f"{self.label}{RESULTS_SUFFIX}"

    @property
    def label(self) -> str:
        """`p01-main`, `p02-main-resume`, `p03-isolated-1-rerun`: for file names only."""
        attempt = "" if self.attempt is Attempt.FIRST else f"-{self.attempt.value}"
        return f"p{self.sequence:02d}-{self.batch.name}{attempt}"

    @property
    def junit_file(self) -> Path:
        # not *.xml: CI collects `results/**/*.xml`, and the merged junit.xml already holds these testcases
        return self.parts_dir / f"{self.label}.junit.part"

    @property
    def events_file(self) -> Path:
        return self.parts_dir / f"{self.label}.events.jsonl"

    @property
    def report_file(self) -> Path:
        return self.parts_dir / f"{self.label}.collected.json"

    @property
    def log_file(self) -> Path:
        return self.parts_dir / f"{self.label}.log"

    @property
    def done_file(self) -> Path:
        """Rank 0 of a multi-node launch writes it when pytest ends; the other ranks wait for it."""
        return self.parts_dir / f"{self.label}.done"

    def launcher(self, python: str) -> list[str]:
        """What the pytest command runs under: nothing on one node, `srun` across the nodes otherwise."""
        if self.nodes <= 1:
            return []
        return [
            "srun", f"--nodes={self.nodes}", f"--ntasks={self.nodes}", "--ntasks-per-node=1",
            python, "-m", RANKS_LAUNCHER, f"--done={self.done_file}", "--",
        ]  # fmt: skip

    def command(self, python: str) -> list[str]:
        """The exact command line (options as `--opt=value`: a separate value would count as a path when
        pytest picks its rootdir)."""
        command = [
            *self.launcher(python),
            python, "-m", "pytest", "-p", TEST_LIST_PLUGIN, "-ra", "--continue-on-collection-errors",
            f"--test-list={self.list_file}",
            f"--test-list-report={self.report_file}",
            f"--stage-name={self.stage}",
            f"--junit-stream={self.junit_file}",
            f"--events={self.events_file}",
            f"--output-log={self.log_file}",
            f"--timeout={self.test_timeout_seconds}",
            "--timeout-method=thread",
        ]  # fmt: skip
        for option, value in (
            ("--waives-file", self.waives_file),
            ("--waive-gpu", self.waive_gpu),
            ("--only-nodeids", self.only_nodeids),
            ("--exclude-nodeids", self.exclude_nodeids),
            ("--exclude-entries", self.exclude_entries),
        ):
            if value is not None:
                command.append(f"{option}={value}")
        if self.record_touches:
            command += ["-p", TOUCH_PLUGIN, f"{TOUCH_OPTION}={self.touches_file}"]
        if self.priority_file is not None:
            command += ["-p", ORDER_PLUGIN, f"{ORDER_OPTION}={self.priority_file}"]
        if self.workers > 1:
            command += [f"--numprocesses={self.workers}", f"--dist={XDIST_DISTRIBUTION}"]
        return command + list(self.extra_args)

    def environment(self, base: Mapping[str, str] = os.environ) -> dict[str, str]:
        """The child's whole environment: `base` less every way into the history (the tests run a change's
        code: only ci-tool writes the history), with the stage's variables and its perf hand-back on top;
        under xdist, a thread a worker (module docstring)."""
        threads = {name: "1" for name in WORKER_THREAD_VARIABLES if name not in base} if self.workers > 1 else {}
        return {
            **without_history_access(base), **threads, **self.variables,
            PERF_RESULTS_ENV: str(self.perf_results_file),
        }  # fmt: skip


def stage_variables(plan: StagePlan, run_id: str, perf_snapshot: Path | None = None) -> dict[str, str]:
    """What a stage adds to its pytest processes' environment: its name (TensorRT-LLM's CI exports
    `stageName`), the run id, its perf gate, and what its perf cases read of the history (a snapshot: the
    tests never hold the history itself)."""
    variables = {
        "CI_TOOL_STAGE": plan.name.name,
        "CI_TOOL_RUN_ID": run_id,
        "stageName": plan.name.name,
        PERF_GATE_ENV: plan.perf_gate.value,
    }
    if perf_snapshot is not None:
        variables[PERF_SNAPSHOT_ENV] = str(perf_snapshot)
    return variables


def batches_of(plan: StagePlan) -> list[Batch]:
    """The regular lines (when there are any) and each ISOLATION line."""
    batches = [Batch(0, plan.regular)] if plan.regular else []
    return batches + [Batch(number, (line,)) for number, line in enumerate(plan.isolated, start=1)]


def lists_dir(settings: RunSettings) -> Path:
    return settings.results_dir / "lists"


def list_file(settings: RunSettings, batch: Batch) -> Path:
    """The list file a batch's processes read."""
    return lists_dir(settings) / f"{batch.name}.txt"


def isolated_file(settings: RunSettings) -> Path:
    """The ISOLATION lines, which the main process leaves out (a folder line may select them too)."""
    return lists_dir(settings) / "isolated.txt"


def priority_file(settings: RunSettings) -> Path:
    """The tests every process of the stage runs first (the plan's priority), one node id or file a line."""
    return lists_dir(settings) / "priority.txt"


def planned_invocations(plan: StagePlan, settings: RunSettings) -> list[PytestInvocation]:
    """The first process of each batch, in order: what a run of the plan starts when no test crashes and
    nothing is rerun."""
    variables = {**stage_variables(plan, settings.run_id, settings.perf_snapshot), **settings.variables}
    extra = (*plan.pytest_args, *(DETAILED_LOG_ARGS if settings.detailed_log else ()))
    priority = priority_file(settings).resolve() if plan.priority.test_ids else None
    return [
        PytestInvocation(
            batch=batch,
            sequence=sequence,
            list_file=list_file(settings, batch).resolve(),
            stage=plan.name.name,
            parts_dir=(settings.results_dir / "parts").resolve(),
            test_timeout_seconds=settings.test_timeout_seconds,
            waives_file=Path(plan.waives_file).resolve() if plan.waives_file else None,
            waive_gpu=plan.name.gpu,
            exclude_entries=isolated_file(settings).resolve() if batch.number == 0 and plan.isolated else None,
            extra_args=extra,
            variables=variables,
            nodes=settings.nodes,
            record_touches=settings.record_touches,
            priority_file=priority,
            workers=_workers(batch, settings),
        )
        for sequence, batch in enumerate(batches_of(plan), start=1)
    ]


def _workers(batch: Batch, settings: RunSettings) -> int:
    """The regular lines' processes: the stage's workers, unless a process must run its tests one at a time:
    an ISOLATION line's, one spread over nodes (its ranks hold the nodes for one pytest), one that records
    touches (one coverage file a process)."""
    alone = batch.number != 0 or settings.nodes > 1 or settings.record_touches
    return 1 if alone else settings.workers


def next_attempt(
    first: PytestInvocation,
    sequence: int,
    attempt: Attempt,
    *,
    only_nodeids: Path | None = None,
    exclude_nodeids: Path | None = None,
) -> PytestInvocation:
    """A later process of the same batch: a resume (leaving out the tests done) or the rerun (of only the
    flaky failures)."""
    return replace(
        first,
        sequence=sequence,
        attempt=attempt,
        only_nodeids=only_nodeids.resolve() if only_nodeids else None,
        exclude_nodeids=exclude_nodeids.resolve() if exclude_nodeids else None,
    )
