"""What is read back from the history: runs, stages, tests; slowest and flaky tests; durations export.

Flaky means either of:
    passed on rerun   the first attempt failed and the one rerun passed (in the same stage)
    flipping          within the window, the test's final outcome changed between consecutive runs of
                      the same stage family (`A10-PyTorch-2` and `A10-PyTorch-3` are one family), so a
                      test that fails only on one GPU is not called flaky.
Durations are the median of a test's last DURATION_SAMPLES non-skipped results (timeouts included:
they will take that long again).
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ci_tool.errors import HistoryError, Where, did_you_mean
from ci_tool.history import rows
from ci_tool.history.schema import CODE_VERSION
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import TestOutcome

DURATION_SAMPLES = 5
TREND_SAMPLES = 30
PROCESSES = "processes"  # a stage's details key: its pytest processes (run/recording.process_samples)
PREDICTED_SECONDS = "predicted_seconds"  # a stage's details key: what planning predicted
_STAGE_OF_FAMILY = re.compile(r"(.+)-\d+(?:-cbts)?(?:-attempt-\d+)?")
_WINDOW = "SELECT run_id FROM runs ORDER BY started_at DESC LIMIT ?"


@dataclass(frozen=True)
class FlakyTest:
    test_id: str
    family: str
    results: int  # final outcomes seen in the window (skips excluded)
    passed_on_rerun: int
    flips: int  # changes of final outcome between consecutive runs
    last_seen_run: str = ""  # the newest run where it flipped or passed on rerun
    last_seen_at: float = 0.0  # that run's start (seconds since the epoch)


@dataclass(frozen=True)
class SlowTest:
    test_id: str
    median_seconds: float
    results: int
    recent: tuple[float, ...] = ()  # its durations in the window, oldest first (TREND_SAMPLES at most)


def stage_family(stage: str) -> str:
    """`A10-PyTorch-3` (and `A10-PyTorch-3-cbts`, `A10-PyTorch-3-attempt-2`) -> `A10-PyTorch`; names
    without a shard index are their own family."""
    match = _STAGE_OF_FAMILY.fullmatch(stage)
    return match.group(1) if match else stage


def run_columns(store: HistoryStore) -> str:
    """The SQL of rows.RUN_COLUMNS (a file older than CODE_VERSION has no code: empty)."""
    code = "code_commit, code_diff, scope" if store.version >= CODE_VERSION else "'', '', ''"
    return f"run_id, command, state, started_at, finished_at, host, details_json, {code}"


def recent_runs(store: HistoryStore, *, limit: int = 10) -> list[RunRecord]:
    """The newest runs; a bad row is left out (with a warning): the list of the others still helps."""
    raw = store.rows(f"SELECT {run_columns(store)} FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?", (limit,))
    return rows.read(store, raw, lambda row: rows.run_record(store, row), skip=True)


def newest_run_id(store: HistoryStore) -> str | None:
    """The id of the newest run (`report latest`), None without runs; a bad row is an error, not skipped:
    the newest run is the one asked for."""
    row = store.row("SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT 1")
    return rows.view(store, "runs", "run_id", row).key_text("run_id") if row is not None else None


def get_run(store: HistoryStore, run_id: str) -> RunRecord:
    """One named run; a bad row is an error (whatever shows the run would be wrong)."""
    row = store.row(f"SELECT {run_columns(store)} FROM runs WHERE run_id = ?", (run_id,))
    if row is None:
        known = [run.run_id for run in recent_runs(store, limit=50)]
        raise HistoryError(
            f"expected a recorded run id, found {run_id!r}",
            where=Where(str(store.path)),
            hint=did_you_mean(run_id, known) or "`ci-tool history` lists recent runs",
        )
    return rows.run_record(store, row)


def run_stages(store: HistoryStore, run_id: str) -> list[StageRecord]:
    """The stages of a run in the order they were recorded; a bad row is an error (a report of the run)."""
    raw = store.rows(f"SELECT {rows.STAGE_COLUMNS} FROM stages WHERE run_id = ? ORDER BY rowid", (run_id,))
    return rows.read(store, raw, lambda row: rows.stage_record(store, row), skip=False)


def stage_tests(store: HistoryStore, run_id: str, stage: str) -> list[TestRecord]:
    """The tests of one stage of a run; a bad row is an error (a report of the run)."""
    raw = store.rows(
        f"SELECT {rows.TEST_COLUMNS} FROM test_results WHERE run_id = ? AND stage = ? ORDER BY rowid", (run_id, stage)
    )
    return rows.read(store, raw, lambda row: rows.test_record(store, row, run_id=run_id, stage=stage), skip=False)


@dataclass(frozen=True)
class _Result:
    """One non-skipped test result of the window, with the run it belongs to."""

    test_id: str
    stage: str
    outcome: TestOutcome
    rerun_outcome: TestOutcome | None
    seconds: float
    run_id: str
    run_started_at: float

    @property
    def final_outcome(self) -> TestOutcome:
        return self.rerun_outcome or self.outcome


def _window_rows(store: HistoryStore, window_runs: int) -> list[_Result]:
    """The non-skipped results of the newest `window_runs` runs, oldest first; a bad row is left out (with a
    warning): durations, slowest and flaky tests sum over many results."""
    raw = store.rows(
        f"SELECT {_WINDOW_COLUMNS} FROM test_results t JOIN runs r ON r.run_id = t.run_id "
        f"WHERE t.run_id IN ({_WINDOW}) AND coalesce(t.rerun_outcome, t.outcome) != ? "
        "ORDER BY r.started_at, t.recorded_at, t.rowid",
        (window_runs, TestOutcome.SKIPPED.value),
    )
    return rows.read(store, raw, lambda row: _window_result(store, row), skip=True)


_WINDOW_COLUMNS = "t.test_id, t.stage, t.outcome, t.rerun_outcome, t.duration_seconds, r.run_id, r.started_at"


def _window_result(store: HistoryStore, row: Sequence[Any]) -> _Result:
    r = rows.view(store, "test_results", _WINDOW_COLUMNS, row).keyed(**{"r.run_id": "run id", "t.stage": "stage"})
    return _Result(
        r.key_text("t.test_id"), r.key_text("t.stage"), r.vocabulary("t.outcome", TestOutcome),
        r.optional_vocabulary("t.rerun_outcome", TestOutcome), r.seconds("t.duration_seconds"),
        r.key_text("r.run_id"), r.timestamp("r.started_at"),
    )  # fmt: skip


def export_durations(store: HistoryStore, *, window_runs: int = 50) -> dict[str, float]:
    """`.test_durations`: test id -> median seconds of its latest results, sorted by id."""
    samples: dict[str, list[float]] = defaultdict(list)
    for result in _window_rows(store, window_runs):
        samples[result.test_id].append(result.seconds)
    return {
        test_id: round(statistics.median(found[-DURATION_SAMPLES:]), 3) for test_id, found in sorted(samples.items())
    }


def export_process_costs(store: HistoryStore, *, window_runs: int = 50) -> dict[str, float]:
    """List entry -> the median of its latest per-process costs: a process's wall seconds beyond its tests'
    own, shared equally by the entries it ran (an entry run alone, ISOLATION, gets its process's cost
    exactly). Sorted by entry; `durations.process_cost_key` names them in the durations file."""
    samples: dict[str, list[float]] = defaultdict(list)
    raw = store.rows(
        f"SELECT s.run_id, s.name, s.details_json FROM stages s JOIN runs r ON r.run_id = s.run_id "
        f"WHERE s.run_id IN ({_WINDOW}) ORDER BY r.started_at, s.started_at",
        (window_runs,),
    )

    def details(row: Sequence[Any]) -> dict[str, object]:
        stage = rows.view(store, "stages", "run_id, name, details_json", row).keyed(run_id="run id", name="stage")
        return stage.details("details_json")

    for found_details in rows.read(store, raw, details, skip=True):  # a sum over many stages: a bad one is left out
        processes = found_details.get(PROCESSES)
        for process in processes if isinstance(processes, list) else []:
            if not isinstance(process, dict):
                continue
            entries, seconds, tests = process.get("entries"), process.get("seconds"), process.get("tests_seconds")
            if not isinstance(entries, list) or not entries:
                continue
            if not isinstance(seconds, int | float) or not isinstance(tests, int | float):
                continue
            if not _is_seconds(seconds) or not _is_seconds(tests):  # hand-edited details: 1e400, -1, NaN
                continue
            share = max(0.0, seconds - tests) / len(entries)
            for entry in entries:
                samples[str(entry)].append(share)
    return {entry: round(statistics.median(found[-DURATION_SAMPLES:]), 3) for entry, found in sorted(samples.items())}


def _is_seconds(value: object) -> bool:
    """A duration a clock measured (an int too large for a float is not one, and would not subtract)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= rows.MAX_SECONDS


@dataclass(frozen=True)
class DurationsMerge:
    """A `.test_durations` file with the history's entries merged in, and what the merge did."""

    durations: dict[str, float]  # sorted by id
    updated: int  # in the file and recorded: the recorded value wins
    added: int  # recorded, not in the file
    kept: int  # in the file, not recorded in the window: kept as they are


def merge_durations(existing: Mapping[str, float], recorded: Mapping[str, float]) -> DurationsMerge:
    """The file's entries updated by the recorded ones; entries the window did not record stay."""
    updated = sum(1 for test_id in recorded if test_id in existing)
    return DurationsMerge(
        dict(sorted({**existing, **recorded}.items())),
        updated=updated,
        added=len(recorded) - updated,
        kept=len(existing) - updated,
    )


def slowest_tests(store: HistoryStore, *, limit: int = 10, window_runs: int = 50) -> list[SlowTest]:
    samples: dict[str, list[float]] = defaultdict(list)
    for result in _window_rows(store, window_runs):
        samples[result.test_id].append(result.seconds)
    slow = [
        SlowTest(t, statistics.median(s[-DURATION_SAMPLES:]), len(s), tuple(s[-TREND_SAMPLES:]))
        for t, s in samples.items()
    ]
    return sorted(slow, key=lambda s: (-s.median_seconds, s.test_id))[:limit]


def flaky_tests(store: HistoryStore, *, window_runs: int = 30) -> list[FlakyTest]:
    """Tests that passed on rerun or flipped outcome within the window, most flips first."""
    history: dict[tuple[str, str], list[TestOutcome]] = defaultdict(list)
    reruns: dict[tuple[str, str], int] = defaultdict(int)
    last_seen: dict[tuple[str, str], _Result] = {}
    for result in _window_rows(store, window_runs):
        key = (result.test_id, stage_family(result.stage))
        first, final = result.outcome, result.final_outcome
        outcomes = history[key]
        if (final is TestOutcome.PASSED and first is not TestOutcome.PASSED) or (
            outcomes and outcomes[-1] != final.counted_as
        ):
            last_seen[key] = result
        if final is TestOutcome.PASSED and first is not TestOutcome.PASSED:
            reruns[key] += 1
        outcomes.append(final.counted_as)
    found = []
    for key, outcomes in history.items():
        flips = sum(1 for before, after in itertools.pairwise(outcomes) if before != after)
        if key in last_seen:
            seen = last_seen[key]
            found.append(FlakyTest(key[0], key[1], len(outcomes), reruns[key], flips, seen.run_id, seen.run_started_at))
    return sorted(found, key=lambda f: (-(f.flips + f.passed_on_rerun), f.test_id, f.family))
