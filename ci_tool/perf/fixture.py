"""The pytest side of perf sanity: a `perf_sanity` fixture that records a case's metrics and gates them.

`perf_sanity.report(case, values, noise=..., rounds=...)`: the case's metrics (the medians of its rounds,
with their noise, noise.py) go into the history (keyed by case, GPU type and metric, with the run, stage,
branch and commit), each is judged against this GPU type's committed baseline (gate.py) and the stage's gate
(the runner exports it): a regression fails a pre-merge PerfSanity stage, warns in post-merge or
FUNCTIONAL-ONLY stages, and lost CUDA-graph coverage on a case that requires graphs always fails. A
post-merge stage also searches each gated metric's post-merge series for change points (shifts.py): one for
the worse that this run brought to light warns, with the commit range it landed in, whatever the threshold
said. Each metric is also a numeric JUnit property (perf mode's results log reads those) and the verdicts
travel as one `ci_tool.perf` property (transport.py) for reports that only have the JUnit (the PR comment).

    from ci_tool.perf.fixture import perf_sanity  # noqa: F401  (a pytest fixture, in a conftest.py)

Under ci-tool's stage runner the fixture never opens the history: it reads the runner's snapshot of it and
hands its rows back through a file the runner records (handoff.py; a test process holds no way into the
history). A plain `pytest` reads and records the history itself.

Where things come from: $CI_TOOL_PERF_RESULTS and $CI_TOOL_PERF_SNAPSHOT (the runner's), else $CI_TOOL_HISTORY
(else .ci-tool/history.sqlite), $CI_TOOL_PERF_BASELINES (else
tests/scripts/perf-sanity/baselines under the rootdir), $CI_TOOL_RUN_ID and $CI_TOOL_STAGE (the runner's),
$CI_TOOL_TARGET_BRANCH (main), $CI_TOOL_BRANCH (the target branch), $CI_TOOL_COMMIT or $GIT_COMMIT (else
`git rev-parse HEAD`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import subprocess
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import pytest

from ci_tool import sysinfo
from ci_tool.errors import CiToolError
from ci_tool.history.perf_results import PerfResult, latest_post_merge, perf_series, record_perf_results
from ci_tool.history.store import HistoryStore, history_path
from ci_tool.layout import HISTORY_ENV
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.baselines import BASELINE_DIR, Baseline, load_baselines
from ci_tool.perf.config import GraphPolicy, Mode, PerfCase
from ci_tool.perf.devices import perf_gpu_type
from ci_tool.perf.gate import Judged, failure_message, judge, warning_message
from ci_tool.perf.handoff import PERF_RESULTS_ENV, PERF_SNAPSHOT_ENV, Snapshot, append_results, read_snapshot
from ci_tool.perf.metrics import metric
from ci_tool.perf.shifts import SHIFT_WINDOW, new_regressions
from ci_tool.perf.transport import PERF_PROPERTY, to_property
from ci_tool.stages.modes import perf_gate_from_env
from ci_tool.stages.names import parse_stage_name

BASELINES_ENV = "CI_TOOL_PERF_BASELINES"
TARGET_BRANCH_ENV = "CI_TOOL_TARGET_BRANCH"
DEFAULT_TARGET_BRANCH = "main"
CPU_GPU_TYPE = "cpu"  # the GPU type of CPU-mode cases, whatever machine runs them
T = TypeVar("T")
# The histories this process could not open, read or write: not tried again (see PerfSanity._store).
_UNAVAILABLE: set[str] = set()


class PerfReads(Protocol):
    """What a case reads of the recorded results: the history itself, or the runner's snapshot of it."""

    def latest_post_merge(self, case_id: str, *, gpu: str, metric: str, branch: str) -> PerfResult | None: ...

    def post_merge_series(self, case_id: str, *, gpu: str, metric: str, limit: int) -> list[PerfResult]: ...


@dataclass(frozen=True)
class _HistoryReads:
    """The history, read and written by this process (a plain `pytest`)."""

    store: HistoryStore

    def latest_post_merge(self, case_id: str, *, gpu: str, metric: str, branch: str) -> PerfResult | None:
        return latest_post_merge(self.store, case_id, gpu=gpu, metric=metric, branch=branch)

    def post_merge_series(self, case_id: str, *, gpu: str, metric: str, limit: int) -> list[PerfResult]:
        return perf_series(self.store, case_id, gpu=gpu, metric=metric, limit=limit, post_merge=True)


class PerfRegressionWarning(UserWarning):
    """A perf regression in a stage whose gate only warns."""


@dataclass(frozen=True)
class Provenance:
    run_id: str
    stage: str
    post_merge: bool
    branch: str
    target_branch: str
    commit: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str], rootdir: Path) -> Provenance:
        stage = environ.get("CI_TOOL_STAGE", "")
        post_merge = False
        if stage:
            try:
                post_merge = parse_stage_name(stage).post_merge
            except CiToolError:  # a stage name from elsewhere: pre-merge, as the grammar's default
                post_merge = False
        target = environ.get(TARGET_BRANCH_ENV) or DEFAULT_TARGET_BRANCH
        commit = environ.get("CI_TOOL_COMMIT") or environ.get("GIT_COMMIT") or _git_head(rootdir)
        run_id = environ.get("CI_TOOL_RUN_ID") or f"pytest-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        return cls(run_id, stage, post_merge, environ.get("CI_TOOL_BRANCH") or target, target, commit)


@functools.cache
def _git_head(rootdir: Path) -> str:
    try:
        found = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=rootdir, capture_output=True,
                               text=True, timeout=10, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return found.stdout.strip() if found.returncode == 0 else ""


@functools.cache
def gpu_type(mode: Mode) -> str:
    """The GPU type of sysinfo's GPU (`H200`; `H100` for an `H100 80GB HBM3`) for GPU cases; `cpu` for CPU cases
    and machines without a GPU."""
    if mode is Mode.CPU:
        return CPU_GPU_TYPE
    return perf_gpu_type(str(sysinfo.probe().get("gpu") or CPU_GPU_TYPE))


class PerfSanity:
    def __init__(self, request: pytest.FixtureRequest, environ: Mapping[str, str]) -> None:
        self.request = request
        self.environ = environ
        self.rootdir = Path(request.config.rootpath)

    def fails(self, case: PerfCase, values: Mapping[str, float], *, noise: Mapping[str, float] | None = None) -> bool:
        """Whether the gate would fail these values against the baselines alone (nothing read or recorded):
        the test then measures the case again in a fresh process before it reports (second_process.py)."""
        judged = judge(values, self._baselines(case), gate=perf_gate_from_env(self.environ),
                       requires_graphs=case.cuda_graphs is GraphPolicy.REQUIRED, noise=noise)  # fmt: skip
        return any(j.verdict.fails for j in judged)

    def report(
        self,
        case: PerfCase,
        values: Mapping[str, float],
        *,
        noise: Mapping[str, float] | None = None,
        rounds: int = 1,
        remeasured: str = "",
    ) -> list[Judged]:
        """Record, judge and gate one case's metrics (medians over `rounds`, with their `noise`); returns the
        verdicts (the test may assert more). `remeasured`: why these values are a second process's (the
        gated metrics' notes carry it)."""
        gpu = gpu_type(case.mode)
        baselines = self._baselines(case)
        origin = Provenance.from_env(self.environ, self.rootdir)
        gate = perf_gate_from_env(self.environ)
        reads = self._reads()
        target: dict[str, float] = {}
        if reads is not None:
            latest = functools.partial(self._target_latest, case_id=case.case_id, gpu=gpu, origin=origin, values=values)
            target, reads = self._reading(reads, latest, target)
        judged = judge(values, baselines, gate=gate, requires_graphs=case.cuda_graphs is GraphPolicy.REQUIRED,
                       target_latest=target, target_branch=origin.target_branch, noise=noise)  # fmt: skip
        if remeasured:
            judged = [_with_note(j, remeasured) if metric(j.metric).gated else j for j in judged]
        rows = [self._row(case, gpu, origin, j, rounds) for j in judged]
        if reads is not None and origin.post_merge:
            unchanged = (judged, rows)
            shifts = functools.partial(self._change_points, judged=judged, rows=rows)
            (judged, rows), reads = self._reading(reads, shifts, unchanged)
        self._record(reads, rows)
        node = self.request.node
        node.user_properties.append(("perf_gate", gate.value))
        node.user_properties.extend((j.metric, round(j.value, 6)) for j in judged)
        node.user_properties.append((PERF_PROPERTY, to_property(rows)))
        message = failure_message(case.case_id, gpu, judged)
        if message:
            pytest.fail(message, pytrace=False)
        warned = warning_message(case.case_id, gpu, judged)
        if warned:
            warnings.warn(PerfRegressionWarning(f"{warned} (perf gate: {gate.value})"), stacklevel=2)
        return judged

    def _baselines(self, case: PerfCase) -> dict[str, Baseline]:
        """The case's baselines on this GPU type, by metric."""
        folder = Path(self.environ.get(BASELINES_ENV) or self.rootdir / BASELINE_DIR)
        return {m: b for (c, m), b in load_baselines(folder, gpu_type(case.mode)).items() if c == case.case_id}

    def _change_points(
        self, reads: PerfReads, judged: list[Judged], rows: list[PerfResult]
    ) -> tuple[list[Judged], list[PerfResult]]:
        """A post-merge run's gated metrics whose series gained a change point for the worse: WARNED, the
        change point (levels, commit range) in the note."""
        out_judged, out_rows = [], []
        for j, row in zip(judged, rows, strict=True):
            if metric(j.metric).gated and not j.verdict.fails:
                earlier = reads.post_merge_series(row.case_id, gpu=row.gpu, metric=row.metric, limit=SHIFT_WINDOW)
                found = new_regressions([*(r for r in earlier if r.run_id != row.run_id), row][-SHIFT_WINDOW:])
                if found:
                    note = "; ".join([*([j.note] if j.note else []), *(f"new {s.line()}" for s in found)])
                    j = dataclasses.replace(j, verdict=PerfVerdict.WARNED, note=note)
                    row = dataclasses.replace(row, verdict=PerfVerdict.WARNED, note=note)
            out_judged.append(j)
            out_rows.append(row)
        return out_judged, out_rows

    @property
    def _handed_back(self) -> Path | None:
        """Where the runner takes this process's rows (None: no runner; the history is this process's own)."""
        found = self.environ.get(PERF_RESULTS_ENV)
        return Path(found) if found else None

    def _reads(self) -> PerfReads | None:
        """What the case reads: the runner's snapshot under a runner (None without one: the runner had no
        history), else the history itself, or None when it cannot be had."""
        if self._handed_back is None:
            store = self._store()
            return _HistoryReads(store) if store is not None else None
        snapshot = self.environ.get(PERF_SNAPSHOT_ENV)
        if not snapshot or snapshot in _UNAVAILABLE:
            return None
        try:
            return _snapshot(snapshot)
        except CiToolError as error:
            warnings.warn(f"perf results not read: {error}", stacklevel=3)
            _UNAVAILABLE.add(snapshot)
            return None

    def _store(self) -> HistoryStore | None:
        """The history, or None when it cannot be had: the results still gate, and losing their record must
        not fail the case. One that failed is not tried again in this process: a server that stopped
        answering would cost every later case its deadline."""
        try:
            where = history_path(None, self.environ)
        except CiToolError as error:  # a location that is none
            self._lost(None, error)
            return None
        if str(where) in _UNAVAILABLE:
            return None
        try:
            return HistoryStore(where)
        except CiToolError as error:
            warnings.warn(f"perf results not recorded: {error}", stacklevel=4)
            _UNAVAILABLE.add(str(where))
            return None

    def _reading(self, reads: PerfReads, read: Callable[[PerfReads], T], default: T) -> tuple[T, PerfReads | None]:
        """`read(reads)` and the reads still in use, or `default` and None when the history failed it."""
        try:
            return read(reads), reads
        except CiToolError as error:
            self._lost(reads.store if isinstance(reads, _HistoryReads) else None, error)
            return default, None

    def _lost(self, store: HistoryStore | None, error: CiToolError) -> None:
        warnings.warn(f"perf results not recorded: {error}", stacklevel=4)
        _UNAVAILABLE.add(str(store.path) if store is not None else self.environ.get(HISTORY_ENV, ""))
        if store is not None:
            with contextlib.suppress(CiToolError):
                store.close()

    def _target_latest(
        self, reads: PerfReads, case_id: str, gpu: str, origin: Provenance, values: Mapping[str, float]
    ) -> dict[str, float]:
        latest = {}
        for name in values:
            found = reads.latest_post_merge(case_id, gpu=gpu, metric=name, branch=origin.target_branch)
            if found is not None and found.run_id != origin.run_id:
                latest[name] = found.value
        return latest

    def _record(self, reads: PerfReads | None, rows: list[PerfResult]) -> None:
        """Hand the rows back to the runner, or, in a plain `pytest`, record them in the history."""
        handed_back = self._handed_back
        if handed_back is not None:
            try:
                append_results(handed_back, rows)
            except OSError as error:
                warnings.warn(f"perf results not handed back to ci-tool: {handed_back}: {error.strerror}", stacklevel=3)
            return
        if not isinstance(reads, _HistoryReads):
            return
        try:
            with reads.store:
                record_perf_results(reads.store, rows)
        except CiToolError as error:
            self._lost(reads.store, error)

    def _row(self, case: PerfCase, gpu: str, origin: Provenance, judged: Judged, rounds: int) -> PerfResult:
        baseline = judged.baseline
        return PerfResult(
            origin.run_id, origin.stage, case.case_id, gpu, judged.metric, judged.value, judged.verdict, time.time(),
            baseline.value if baseline else None, baseline.threshold if baseline else None, judged.note,
            self.request.node.nodeid, origin.post_merge, origin.branch, origin.commit, judged.noise, rounds,
        )  # fmt: skip


@functools.cache
def _snapshot(path: str) -> Snapshot:
    """The runner's snapshot, read once per process (the runner writes it before the stage starts)."""
    return read_snapshot(Path(path))


@pytest.fixture
def perf_sanity(request: pytest.FixtureRequest) -> PerfSanity:
    """`perf_sanity.report(case, {metric: value})`: record, judge against the baselines, fail or warn."""
    return PerfSanity(request, os.environ)


def _with_note(judged: Judged, note: str) -> Judged:
    return dataclasses.replace(judged, note="; ".join(found for found in (judged.note, note) if found))
