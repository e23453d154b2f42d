"""Perf-sanity results in the history: one row per (run, stage, case, GPU type, metric), with the code it ran.

    perf_results   value (the median of the case's rounds), noise (1.4826 * MAD of the rounds) and rounds,
                   the baseline and threshold it was gated against, the verdict and its note,
                   whether the stage was post-merge, the branch and commit, when it was recorded

Its DDL is schema.py's, as every table's: migration step 4 made it, and step NOISE_STEP added noise and rounds
(rows from before it read as noise 0 over 1 round). Rows are written
by ci-tool's stage runner from what a stage's perf-sanity cases handed back (ci_tool.perf.handoff: its tests
never hold the history), and by the perf-sanity pytest fixture itself in a plain `pytest` run; `ci-tool perf
baseline set` takes medians from them and the reports and trends read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ci_tool.history import rows
from ci_tool.history.backend import Writer, upsert
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import PerfVerdict

_COLUMNS = (
    "run_id, stage, case_id, gpu, metric, value, baseline, threshold, verdict, note, test_id, post_merge, branch, "
    "commit_sha, recorded_at, noise, rounds"
)
_UPSERT = upsert(
    "perf_results", [c.strip() for c in _COLUMNS.split(",")], ("run_id", "stage", "case_id", "gpu", "metric")
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
    values = [
        (
            r.run_id, r.stage, r.case_id, r.gpu, r.metric, r.value, r.baseline, r.threshold, r.verdict.value,
            r.note, r.test_id, int(r.post_merge), r.branch, r.commit, r.recorded_at, r.noise, r.rounds,
        )
        for r in results
    ]  # fmt: skip

    def insert(db: Writer) -> None:
        db.executemany(_UPSERT, values)

    store.write(insert)


def run_perf_results(store: HistoryStore, run_id: str) -> list[PerfResult]:
    """A run's perf results, in the order they were recorded (stage, then case, then metric); a bad row is an
    error (the run's report would be wrong)."""
    raw = store.rows(f"SELECT {_COLUMNS} FROM perf_results WHERE run_id = ? ORDER BY recorded_at, rowid", (run_id,))
    return rows.read(store, raw, lambda row: _result(store, row), skip=False)


def perf_series(
    store: HistoryStore, case_id: str, *, gpu: str, metric: str, limit: int = 200, post_merge: bool | None = None
) -> list[PerfResult]:
    """The newest `limit` results of one (case, GPU type, metric), oldest first: a trend.

    `post_merge` True/False keeps only post-merge / pre-merge stages' results; None keeps both. A bad row
    is left out with a warning: a trend and a median still stand without it."""
    where = "case_id = ? AND gpu = ? AND metric = ?"
    parameters: list[object] = [case_id, gpu, metric]
    if post_merge is not None:
        where += " AND post_merge = ?"
        parameters.append(int(post_merge))
    raw = store.rows(
        f"SELECT {_COLUMNS} FROM perf_results WHERE {where} ORDER BY recorded_at DESC, rowid DESC LIMIT ?",
        (*parameters, limit),
    )
    return rows.read(store, list(reversed(raw)), lambda row: _result(store, row), skip=True)


def post_merge_snapshot(store: HistoryStore, *, window: int) -> list[PerfResult]:
    """The post-merge results a perf case reads (its target branch's newest, its series' change points): per
    (case, GPU type, metric) the newest `window`, and the newest of each branch; oldest first. A bad row is
    left out with a warning, as in a trend."""
    raw = store.rows(
        f"SELECT {_COLUMNS} FROM (SELECT {_COLUMNS}, rowid AS row_order, "
        "ROW_NUMBER() OVER (PARTITION BY case_id, gpu, metric ORDER BY recorded_at DESC, rowid DESC) AS newest, "
        "ROW_NUMBER() OVER (PARTITION BY case_id, gpu, metric, branch ORDER BY recorded_at DESC, rowid DESC) "
        "AS newest_of_branch FROM perf_results WHERE post_merge = 1) AS ranked "
        "WHERE newest <= ? OR newest_of_branch = 1 ORDER BY recorded_at, row_order",
        (window,),
    )
    return rows.read(store, raw, lambda row: _result(store, row), skip=True)


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
            raw = store.rows(
                "SELECT run_id, value FROM perf_results WHERE case_id = ? AND gpu = ? AND metric = ? "
                "AND recorded_at <= ? ORDER BY recorded_at DESC, rowid DESC LIMIT ?",
                (*key, until, limit),
            )
            trends[key] = rows.read(store, list(reversed(raw)), lambda row: _value(store, row), skip=True)
    return trends


def perf_overview(store: HistoryStore, *, limit: int) -> list[list[PerfResult]]:
    """Every (case, GPU type, metric) recorded: its newest `limit` results, oldest first (the dashboard's perf
    page: the newest against its baseline, the trend and its change points), sorted by case, GPU type and metric;
    a key none of whose rows is good is left out."""
    raw = store.rows("SELECT DISTINCT case_id, gpu, metric FROM perf_results ORDER BY 1, 2, 3")
    keys = rows.read(store, raw, lambda row: _key(store, "case_id, gpu, metric", row), skip=True)
    series = [perf_series(store, case_id, gpu=gpu, metric=metric, limit=limit) for case_id, gpu, metric in keys]
    return [found for found in series if found]


def latest_post_merge(store: HistoryStore, case_id: str, *, gpu: str, metric: str, branch: str) -> PerfResult | None:
    """The newest post-merge result of a (case, GPU type, metric) on `branch`: how the target branch does.
    A bad row reads as none (with a warning): the case is then gated, never waved through."""
    raw = store.rows(
        f"SELECT {_COLUMNS} FROM perf_results WHERE case_id = ? AND gpu = ? AND metric = ? AND post_merge = 1 "
        "AND branch = ? ORDER BY recorded_at DESC, rowid DESC LIMIT 1",
        (case_id, gpu, metric, branch),
    )
    found = rows.read(store, raw, lambda row: _result(store, row), skip=True)
    return found[0] if found else None


def newest_perf_run(store: HistoryStore, *, gpu: str) -> str | None:
    """The run that recorded the newest perf result on a GPU type (None: none did); a bad id is an error."""
    row = store.row("SELECT run_id FROM perf_results WHERE gpu = ? ORDER BY recorded_at DESC LIMIT 1", (gpu,))
    return rows.view(store, "perf_results", "run_id", row).key_text("run_id") if row is not None else None


def perf_keys(store: HistoryStore, *, gpu: str) -> list[tuple[str, str]]:
    """Every (case, metric) recorded for a GPU type, sorted."""
    raw = store.rows("SELECT DISTINCT case_id, metric FROM perf_results WHERE gpu = ? ORDER BY 1, 2", (gpu,))
    keys = rows.read(store, raw, lambda row: _key(store, "case_id, metric", row), skip=True)
    return [(case, metric) for case, metric in keys]


def perf_cases(store: HistoryStore) -> list[tuple[str, str]]:
    """Every (case, GPU type) recorded, sorted: what `perf trend` can draw."""
    raw = store.rows("SELECT DISTINCT case_id, gpu FROM perf_results ORDER BY 1, 2")
    return [(case, gpu) for case, gpu in rows.read(store, raw, lambda r: _key(store, "case_id, gpu", r), skip=True)]


def _result(store: HistoryStore, row: Sequence[Any]) -> PerfResult:
    """A row of _COLUMNS (see rows.py for what each check means). The stage may be empty: a perf case run by
    a plain `pytest`, outside any stage (a baseline's runs), records its results too."""
    r = rows.view(store, "perf_results", _COLUMNS, row).keyed(run_id="run id", case_id="case")
    return PerfResult(
        r.key_text("run_id"), r.text("stage"), r.key_text("case_id"), r.key_text("gpu"), r.key_text("metric"),
        r.number("value"), r.vocabulary("verdict", PerfVerdict), r.timestamp("recorded_at"),
        r.optional_number("baseline"), r.optional_number("threshold"), r.text("note"), r.text("test_id"),
        r.flag("post_merge"), r.text("branch"), r.text("commit_sha"), r.number("noise"), r.count("rounds"),
    )  # fmt: skip


def _value(store: HistoryStore, row: Sequence[Any]) -> float:
    return rows.view(store, "perf_results", "run_id, value", row).keyed(run_id="run id").number("value")


def _key(store: HistoryStore, columns: str, row: Sequence[Any]) -> tuple[str, ...]:
    """The key columns of a DISTINCT row, each a non-empty text."""
    r = rows.view(store, "perf_results", columns, row)
    return tuple(r.key_text(column) for column in r.columns)
