"""Perf-sanity results in the history: one row per (run, stage, case, GPU type, metric), with the code it ran.

    perf_results   value (the median of the case's rounds), noise (1.4826 * MAD of the rounds) and rounds,
                   the baseline and threshold it was gated against, the verdict and its note,
                   whether the stage was post-merge, the branch and commit, when it was recorded

The table is migration step 4 (`SCHEMA_STATEMENTS`, applied by store.py after the steps before it); noise
and rounds are step NOISE_STEP (`NOISE_STATEMENTS`, rows from before it read as noise 0 over 1 round). Rows are written
by the perf-sanity pytest fixture (ci_tool.perf.fixture) as each case ends, so a plain `pytest` run records
them too; `ci-tool perf baseline set` takes medians from them and the reports and trends read them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ci_tool.history.sqlite_errors import damaged
from ci_tool.outcomes import PerfVerdict

if TYPE_CHECKING:  # store.py imports SCHEMA from here
    from ci_tool.history.store import HistoryStore, Row

SCHEMA_STEP = 4
SCHEMA = """
CREATE TABLE IF NOT EXISTS perf_results (
    run_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    case_id TEXT NOT NULL,
    gpu TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    baseline REAL,
    threshold REAL,
    verdict TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    test_id TEXT NOT NULL DEFAULT '',
    post_merge INTEGER NOT NULL DEFAULT 0,
    branch TEXT NOT NULL DEFAULT '',
    commit_sha TEXT NOT NULL DEFAULT '',
    recorded_at REAL NOT NULL,
    PRIMARY KEY (run_id, stage, case_id, gpu, metric)
);
CREATE INDEX IF NOT EXISTS perf_results_by_key ON perf_results (case_id, gpu, metric, recorded_at);
"""
SCHEMA_STATEMENTS = tuple(statement for statement in SCHEMA.split(";") if statement.strip())
NOISE_STEP = 7  # after history-robust's step 6 (run owners); the last step when written
NOISE_STATEMENTS = (
    "ALTER TABLE perf_results ADD COLUMN noise REAL NOT NULL DEFAULT 0",
    "ALTER TABLE perf_results ADD COLUMN rounds INTEGER NOT NULL DEFAULT 1",
)

_COLUMNS = (
    "run_id, stage, case_id, gpu, metric, value, baseline, threshold, verdict, note, test_id, post_merge, branch, "
    "commit_sha, recorded_at, noise, rounds"
)


@dataclass(frozen=True)
class PerfResult:
    """One metric of one perf-sanity case in one stage run."""

    run_id: str
    stage: str
    case_id: str  # `<mode>-<config>-<case>`, the test_e2e parameter id
    gpu: str  # the GPU type (sysinfo's `gpu`, e.g. H200), `cpu` without one
    metric: str
    value: float
    verdict: PerfVerdict
    recorded_at: float
    baseline: float | None = None
    threshold: float | None = None  # relative: 0.1 = 10 % worse than the baseline is a regression
    note: str = ""
    test_id: str = ""
    post_merge: bool = False
    branch: str = ""
    commit: str = ""
    noise: float = 0.0  # 1.4826 * MAD of the case's rounds, in the metric's unit; 0 for one round
    rounds: int = 1  # measured rounds the value is the median of

    @property
    def delta(self) -> float | None:
        """(value - baseline) / baseline, or None without a baseline."""
        if self.baseline is None or self.baseline == 0:
            return None
        return (self.value - self.baseline) / self.baseline


def record_perf_results(store: HistoryStore, results: Sequence[PerfResult]) -> None:
    """Store a case's metrics in one transaction (a case run again in the same run replaces its rows)."""
    rows = [
        (
            r.run_id, r.stage, r.case_id, r.gpu, r.metric, r.value, r.baseline, r.threshold, r.verdict.value,
            r.note, r.test_id, int(r.post_merge), r.branch, r.commit, r.recorded_at, r.noise, r.rounds,
        )
        for r in results
    ]  # fmt: skip

    def insert(db: sqlite3.Connection) -> None:
        db.executemany(
            f"INSERT OR REPLACE INTO perf_results ({_COLUMNS}) VALUES ({', '.join('?' * 17)})",
            rows,
        )

    store.write(insert)


def run_perf_results(store: HistoryStore, run_id: str) -> list[PerfResult]:
    """A run's perf results, in the order they were recorded (stage, then case, then metric)."""
    rows = store.rows(f"SELECT {_COLUMNS} FROM perf_results WHERE run_id = ? ORDER BY recorded_at, rowid", (run_id,))
    return [_result(store, row) for row in rows]


def perf_series(
    store: HistoryStore, case_id: str, *, gpu: str, metric: str, limit: int = 200, post_merge: bool | None = None
) -> list[PerfResult]:
    """The newest `limit` results of one (case, GPU type, metric), oldest first: a trend.

    `post_merge` True/False keeps only post-merge / pre-merge stages' results; None keeps both."""
    where = "case_id = ? AND gpu = ? AND metric = ?"
    parameters: list[object] = [case_id, gpu, metric]
    if post_merge is not None:
        where += " AND post_merge = ?"
        parameters.append(int(post_merge))
    rows = store.rows(
        f"SELECT {_COLUMNS} FROM perf_results WHERE {where} ORDER BY recorded_at DESC, rowid DESC LIMIT ?",
        (*parameters, limit),
    )
    return [_result(store, row) for row in reversed(rows)]


PerfKey = tuple[str, str, str]  # (case, GPU type, metric)


def perf_trends(store: HistoryStore, results: Sequence[PerfResult], *, limit: int) -> dict[PerfKey, list[float]]:
    """For each (case, GPU type, metric) of `results`: its newest `limit` values up to and including the
    newest of `results`, oldest first. Bounded by the run's own time, so a run's trend never changes once
    the run is recorded (the site's run pages are rebuilt only when their run changes)."""
    until = max((r.recorded_at for r in results), default=0.0)
    trends: dict[PerfKey, list[float]] = {}
    for r in results:
        key = (r.case_id, r.gpu, r.metric)
        if key not in trends:
            rows = store.rows(
                "SELECT value FROM perf_results WHERE case_id = ? AND gpu = ? AND metric = ? AND recorded_at <= ? "
                "ORDER BY recorded_at DESC, rowid DESC LIMIT ?",
                (*key, until, limit),
            )
            trends[key] = [float(value) for (value,) in reversed(rows)]
    return trends


def perf_overview(store: HistoryStore, *, limit: int) -> list[list[PerfResult]]:
    """Every (case, GPU type, metric) recorded: its newest `limit` results, oldest first (the dashboard's perf
    page: the newest against its baseline, the trend and its change points), sorted by case, GPU type and metric."""
    keys = store.rows("SELECT DISTINCT case_id, gpu, metric FROM perf_results ORDER BY 1, 2, 3")
    return [perf_series(store, str(case_id), gpu=str(gpu), metric=str(metric), limit=limit)
            for case_id, gpu, metric in keys]  # fmt: skip


def latest_post_merge(store: HistoryStore, case_id: str, *, gpu: str, metric: str, branch: str) -> PerfResult | None:
    """The newest post-merge result of a (case, GPU type, metric) on `branch`: how the target branch does."""
    row = store.row(
        f"SELECT {_COLUMNS} FROM perf_results WHERE case_id = ? AND gpu = ? AND metric = ? AND post_merge = 1 "
        "AND branch = ? ORDER BY recorded_at DESC, rowid DESC LIMIT 1",
        (case_id, gpu, metric, branch),
    )
    return _result(store, row) if row is not None else None


def perf_keys(store: HistoryStore, *, gpu: str) -> list[tuple[str, str]]:
    """Every (case, metric) recorded for a GPU type, sorted."""
    rows = store.rows("SELECT DISTINCT case_id, metric FROM perf_results WHERE gpu = ? ORDER BY 1, 2", (gpu,))
    return [(str(case), str(metric)) for case, metric in rows]


def perf_cases(store: HistoryStore) -> list[tuple[str, str]]:
    """Every (case, GPU type) recorded, sorted: what `perf trend` can draw."""
    rows = store.rows("SELECT DISTINCT case_id, gpu FROM perf_results ORDER BY 1, 2")
    return [(str(case), str(gpu)) for case, gpu in rows]


def _result(store: HistoryStore, row: Row) -> PerfResult:
    (run_id, stage, case_id, gpu, metric, value, baseline, threshold, verdict, note, test_id, post_merge, branch,
     commit, recorded_at, noise, rounds) = row  # fmt: skip
    try:
        parsed = PerfVerdict(verdict)
    except ValueError:
        raise damaged(store.path, "a perf verdict", repr(verdict)) from None
    return PerfResult(
        run_id, stage, case_id, gpu, metric, float(value), parsed, float(recorded_at),
        None if baseline is None else float(baseline), None if threshold is None else float(threshold),
        note, test_id, bool(post_merge), branch, commit, float(noise), int(rounds),
    )  # fmt: skip
