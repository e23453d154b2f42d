"""How a stage's perf-sanity cases reach the history without a way into it: through two files the runner owns.

    $CI_TOOL_PERF_SNAPSHOT   what the cases read: the newest post-merge results of every (case, GPU type,
                             metric), written by the runner before the stage starts (JSON, a list of rows)
    $CI_TOOL_PERF_RESULTS    what the cases measured: the fixture appends one JSON row per line; the runner
                             reads the file once the process ended and records the rows itself, stamped
                             with its own run, stage and commit

A test process runs a change's code, so it gets no credential that writes the history (run/invocation.py):
what it measures travels back through the runner, which records only rows of its own run and stage. A
plain `pytest` (a baseline's runs, a developer's) has neither variable and uses the history directly.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ci_tool.atomic import write_text_atomically
from ci_tool.errors import PerfError, Where
from ci_tool.history.perf_results import PerfResult
from ci_tool.json_file import value_position
from ci_tool.outcomes import PerfVerdict
from ci_tool.text_file import read_text
from ci_tool.typed_json import load

PERF_SNAPSHOT_ENV = "CI_TOOL_PERF_SNAPSHOT"
PERF_RESULTS_ENV = "CI_TOOL_PERF_RESULTS"
SNAPSHOT_WINDOW = 30  # post-merge rows kept per (case, GPU type, metric): more than the change-point window
SNAPSHOT_FILE = "perf-snapshot.json"  # in the stage's results folder
RESULTS_SUFFIX = ".perf.jsonl"  # parts/<process label>.perf.jsonl


@dataclass(frozen=True)
class Snapshot:
    """The post-merge results the cases of a stage may read, oldest first."""

    rows: tuple[PerfResult, ...]

    def latest_post_merge(self, case_id: str, *, gpu: str, metric: str, branch: str) -> PerfResult | None:
        """As perf_results.latest_post_merge, over the snapshot."""
        found = [r for r in self.rows if (r.case_id, r.gpu, r.metric, r.branch) == (case_id, gpu, metric, branch)]
        return found[-1] if found else None

    def post_merge_series(self, case_id: str, *, gpu: str, metric: str, limit: int) -> list[PerfResult]:
        """As perf_results.perf_series(post_merge=True), over the snapshot."""
        found = [r for r in self.rows if (r.case_id, r.gpu, r.metric) == (case_id, gpu, metric)]
        return found[-limit:] if limit > 0 else []


def write_snapshot(path: Path, rows: Sequence[PerfResult]) -> None:
    """The runner's side: the history's newest post-merge results (perf_results.post_merge_snapshot), for a
    stage's cases to read."""
    text = json.dumps([_as_json(row) for row in rows], sort_keys=True)
    write_text_atomically(path, text + "\n", what="the perf results the stage's cases read")


def read_snapshot(path: Path) -> Snapshot:
    """The fixture's side; a file that is no snapshot is a PerfError at the JSON path of what is wrong (the
    case then gates without history)."""
    text = read_text(path, name="the perf snapshot", error=PerfError)
    rows = load(text, tuple[_Row, ...], file=str(path), error=PerfError)
    results = [_result(row, str(path), text, (index,)) for index, row in enumerate(rows)]
    return Snapshot(tuple(sorted(results, key=lambda r: r.recorded_at)))


def append_results(path: Path, rows: Iterable[PerfResult]) -> None:
    """The fixture's side: a case's rows, one JSON line each (appended: a process runs many cases)."""
    with open(path, "a", encoding="utf-8") as out:
        out.write("".join(json.dumps(_as_json(row), sort_keys=True) + "\n" for row in rows))


@dataclass(frozen=True)
class StageStamp:
    """What the runner knows of the rows a stage's processes handed back, and sets on each itself."""

    run_id: str
    stage: str
    post_merge: bool
    commit: str  # the run's commit ('' when unknown: the row's own is kept)
    started_at: float  # the rows' times are held within the stage's run
    ended_at: float


@dataclass(frozen=True)
class HandedBack:
    rows: tuple[PerfResult, ...]
    refused: tuple[str, ...]  # `file:line: why`, one per line that is no perf result


def read_results(paths: Sequence[Path], stamp: StageStamp) -> HandedBack:
    """The runner's side: the rows of a stage's results files, stamped with `stamp` (a test cannot record
    rows for another run or stage, nor move them out of its own run's time); a line that is no row is refused."""
    found: list[PerfResult] = []
    refused: list[str] = []
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as error:
            refused.append(f"{path}: {error.strerror}")
            continue
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = _result(load(line, _Row, file=str(path), error=PerfError), str(path), line, ())
            except PerfError as error:  # located in the line alone: the file's line is `number`
                error.where = replace(error.where or Where(str(path)), line=number)
                refused.append(str(error))
                continue
            found.append(_stamped(row, stamp))
    return HandedBack(tuple(found), tuple(refused))


def _stamped(row: PerfResult, stamp: StageStamp) -> PerfResult:
    return replace(
        row,
        run_id=stamp.run_id,
        stage=stamp.stage,
        post_merge=stamp.post_merge,
        commit=stamp.commit or row.commit,
        recorded_at=min(max(row.recorded_at, stamp.started_at), stamp.ended_at),
    )


@dataclass(frozen=True)
class _Row:
    """A perf result as the two files write it: these are its JSON keys (typed_json reads them)."""

    run_id: str
    stage: str
    case: str
    gpu: str
    metric: str
    value: float
    verdict: PerfVerdict
    recorded_at: float
    baseline: float | None
    threshold: float | None
    note: str
    test_id: str
    post_merge: bool
    branch: str
    commit: str
    noise: float
    rounds: int


def _as_json(row: PerfResult) -> dict[str, object]:
    return dataclasses.asdict(_Row(
        row.run_id, row.stage, row.case_id, row.gpu, row.metric, row.value, row.verdict, row.recorded_at,
        row.baseline, row.threshold, row.note, row.test_id, row.post_merge, row.branch, row.commit, row.noise,
        row.rounds,
    )) | {"verdict": row.verdict.value}  # fmt: skip


def _result(row: _Row, file: str, text: str, parts: tuple[int, ...]) -> PerfResult:
    """The PerfResult a row holds, once its keys name something and it measured at least one round (`text` and
    `parts`: the JSON the row was read from and its place there, for errors)."""
    for key in ("case", "gpu", "metric"):
        if not getattr(row, key):
            raise PerfError(f"expected a non-empty {key}, found ''", where=_where(file, text, parts, key))
    if row.rounds < 1:
        where = _where(file, text, parts, "rounds")
        raise PerfError(f"expected a count of rounds >= 1, found {row.rounds}", where=where)
    return PerfResult(
        run_id=row.run_id, stage=row.stage, case_id=row.case, gpu=row.gpu, metric=row.metric, value=row.value,
        verdict=row.verdict, recorded_at=row.recorded_at, baseline=row.baseline, threshold=row.threshold,
        note=row.note, test_id=row.test_id, post_merge=row.post_merge, branch=row.branch, commit=row.commit,
        noise=row.noise, rounds=row.rounds,
    )  # fmt: skip


def _where(file: str, text: str, parts: tuple[int, ...], key: str) -> Where:
    line, col = value_position(text, (*parts, key)) or (None, None)
    return Where(file, line, col, yaml_path="".join(f"[{part}]" for part in parts) + ("." if parts else "") + key)
