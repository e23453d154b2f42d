"""The run's own report draws its perf trends from the history the run records into (RunRecorder.perf_trends):
the values before the run and its own; a history the run could not use gives none, and the report comes all
the same."""

from __future__ import annotations

from pathlib import Path

from ci_tool.history.perf_results import PerfResult, record_perf_results
from ci_tool.history.recorder import RunRecorder
from ci_tool.history.store import HistoryStore, RunRecord
from ci_tool.outcomes import PerfVerdict, RunState

CASE, GPU, METRIC = "cpu-gemma_like-small-decode", "cpu", "tokens_per_second"


def result(run_id: str, value: float, at: float) -> PerfResult:
    return PerfResult(run_id, "CPU-Generic-1", CASE, GPU, METRIC, value, PerfVerdict.PASSED, at, baseline=100.0)


def test_the_runs_trend_holds_the_earlier_values_and_its_own(tmp_path: Path) -> None:
    history = tmp_path / "history.sqlite"
    with HistoryStore(history) as store:
        store.record_run(RunRecord("r0", "ci-tool run", RunState.PASSED, 1.0, 2.0), [])
        record_perf_results(store, [result("r0", 100.0, 1.5)])
    (tmp_path / "run").mkdir()
    with RunRecorder(history, tmp_path / "run") as recorder:
        recorder.start_run(RunRecord("r1", "ci-tool run", RunState.RUNNING, 3.0))
        recorder.record_perf([result("r1", 90.0, 3.5)])
        trends = recorder.perf_trends(recorder.perf_results(), limit=30)
        one = recorder.perf_trends(recorder.perf_results(), limit=1)
    assert (trends, one) == ({(CASE, GPU, METRIC): [100.0, 90.0]}, {(CASE, GPU, METRIC): [90.0]})


def test_a_history_the_run_cannot_use_gives_no_trend(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a history\n" * 50)
    (tmp_path / "run").mkdir()
    with RunRecorder(tmp_path / "notes.txt", tmp_path / "run") as recorder:
        recorder.start_run(RunRecord("r1", "ci-tool run", RunState.RUNNING, 3.0))
        recorder.record_perf([result("r1", 90.0, 3.5)])
        assert recorder.perf_trends(recorder.perf_results(), limit=30) == {}
