"""Measured flakiness over a real history (SQLite and PostgreSQL) with a planted flaky test (planted.py)."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from ci_tool.history.flakiness import KnownFlaky, StageDevices, flake_stats, known_flaky, stage_devices
from ci_tool.history.locator import History
from ci_tool.history.store import HistoryStore, TestRecord
from tests.ci_tool.history.planted import (
    A10,
    DAY_ONE,
    HOUR,
    PASSED,
    PLANTED,
    PLANTED_STATS,
    RERUN,
    RERUN_SIGNATURE,
    failed,
    plant,
    record_run,
)


def test_the_planted_flake_ranks_first_with_its_rate_and_cost(planted_store: HistoryStore) -> None:
    planted, rerun = flake_stats(planted_store, since=DAY_ONE)
    assert planted == PLANTED_STATS
    assert (planted.rate, planted.rate_text()) == (1 / 3, "33% (2 of 6 runs on A10)")
    # a higher rate, but each flake costs only the failed attempt: 3 x 6 s on 4 GPUs
    assert (rerun.test_id, rerun.gpu, rerun.rate, rerun.passed_on_rerun, rerun.failures, rerun.flips) == (
        RERUN, "DGX_H100", 0.5, 3, 0, 0
    )  # fmt: skip
    assert (rerun.lost_gpu_minutes, rerun.signature) == (1.2, RERUN_SIGNATURE)


def test_broken_stable_and_waived_tests_are_not_flaky(planted_store: HistoryStore) -> None:
    assert {s.test_id for s in flake_stats(planted_store, since=DAY_ONE)} == {PLANTED, RERUN}


def test_the_window_reads_only_runs_started_inside_it(planted_store: HistoryStore) -> None:
    (rerun,) = flake_stats(planted_store, since=DAY_ONE, before=DAY_ONE + 2 * HOUR)  # r1, r2: the planted flake not yet
    assert (rerun.test_id, rerun.runs, rerun.passed_on_rerun) == (RERUN, 2, 1)
    assert flake_stats(planted_store, since=DAY_ONE + 6 * HOUR) == []


def test_the_same_test_is_measured_per_gpu_type(planted_store: HistoryStore) -> None:
    for number in (7, 8):  # the planted test on H100 passes twice: not flaky there
        record_run(
            planted_store,
            f"r{number}",
            DAY_ONE + number * HOUR,
            {"H100_PCIe-PyTorch-1": (60.0, [TestRecord(PLANTED, PASSED, 2.0)])},
        )
    assert [(s.test_id, s.gpu, s.runs) for s in flake_stats(planted_store, since=DAY_ONE)] == [
        (PLANTED, "A10", 6),
        (RERUN, "DGX_H100", 6),
    ]


def test_a_runs_own_failure_does_not_make_its_test_known_flaky(planted_store: HistoryStore) -> None:
    assert set(known_flaky(planted_store, before=DAY_ONE + 6 * HOUR)) == {(PLANTED, "A10"), (RERUN, "DGX_H100")}
    assert known_flaky(planted_store, before=DAY_ONE + 2 * HOUR).keys() == {(RERUN, "DGX_H100")}  # r3 starts then


def test_a_test_that_fails_in_a_new_stage_family_counts_there(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        record_run(store, "v1", DAY_ONE, {"CPU-Generic": (10.0, [TestRecord("c.py::t", PASSED, 1.0)])})
        record_run(store, "v2", DAY_ONE + HOUR, {"CPU-Generic": (10.0, [failed("c.py::t", "AssertionError")])})
        (stats,) = flake_stats(store, since=DAY_ONE)
    assert (stats.gpu, stats.rate, stats.lost_gpu_minutes) == ("CPU", 0.5, round(10 / 60, 3))


@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        (A10, StageDevices("A10", 1)),
        ("DGX_B200-8_GPUs-2_Nodes-PyTorch-3", StageDevices("DGX_B200", 8)),
        ("CPU-Generic-1", StageDevices("CPU", 1)),
        ("CPU-Generic", StageDevices("CPU", 1)),  # a family run whole (`waive verify`, `stage run FAMILY`)
        ("not a stage name!", StageDevices("not a stage name!", 1)),
    ],
    ids=["gpu", "multi-gpu", "cpu", "family", "outside-the-grammar"],
)
def test_stage_devices(stage: str, expected: StageDevices) -> None:
    assert stage_devices(stage) == expected


OTHER = "a.py::test_other"


def _whole_window(store: HistoryStore, before: float) -> KnownFlaky:
    """What a report read before it asked about its failures only: every test's rows of the window tallied."""
    every = {row[0] for row in store.rows("SELECT test_id FROM test_results")}
    return known_flaky(store, before=before, test_ids=every)


def _old_known_flaky(store: HistoryStore, before: float, test_ids: set[str]) -> dict[tuple[str, str], object]:
    return {key: stats for key, stats in _whole_window(store, before).items() if key[0] in test_ids}


def _plant_more(store: HistoryStore) -> None:
    """Runs r7..r10 after planted.py's six: the planted test on H100 red in r7 and r9 (passing between), and
    a.py::test_other on A10 red in r7, r9 and r10, passing in r8."""
    for number in range(7, 11):
        h100 = failed(PLANTED, "AssertionError: h100") if number % 2 else TestRecord(PLANTED, PASSED, 2.0)
        other = TestRecord(OTHER, PASSED, 1.0) if number == 8 else failed(OTHER, "OSError: flaky disk")
        stages = {"H100_PCIe-PyTorch-1": (60.0, [h100]), A10: (600.0, [other])}
        record_run(store, f"r{number}", DAY_ONE + (number - 1) * HOUR, stages)


@pytest.fixture(scope="module")
def replanted(module_history_at: History) -> Generator[HistoryStore]:
    """planted.py's runs and _plant_more's in one history a module on each backend, for the tests that only read
    them: some three hundred cases, which took 40-60 s of the suite's time making and filling a history each."""
    with HistoryStore(module_history_at) as store:
        plant(store)
        _plant_more(store)
        yield store


@pytest.mark.parametrize("hours", range(12), ids=lambda hours: f"hour-{hours}")  # before, at and after each start
@pytest.mark.parametrize("ids_per_query", [1, 2, 500], ids=["one-id-a-query", "two-ids-a-query", "one-query"])
@pytest.mark.parametrize(
    "test_ids",
    [{PLANTED}, {PLANTED, RERUN, OTHER}, {"a.py::test_broken", "a.py::test_stable"}, {"no.py::such"}],
    ids=["the-planted-flake", "three-flakes", "broken-and-stable", "unknown"],
)
def test_known_flaky_of_some_tests_is_the_whole_windows_answer_for_them(
    replanted: HistoryStore, monkeypatch: pytest.MonkeyPatch, ids_per_query: int, test_ids: set[str], hours: int
) -> None:
    monkeypatch.setattr("ci_tool.history.flakiness.IDS_PER_QUERY", ids_per_query)
    before = DAY_ONE + hours * HOUR
    assert known_flaky(replanted, before=before, test_ids=test_ids) == _old_known_flaky(
        replanted, before, test_ids
    )


def test_known_flaky_of_no_tests_reads_nothing(replanted: HistoryStore) -> None:
    assert known_flaky(replanted, before=DAY_ONE + 11 * HOUR, test_ids=set()) == {}


@pytest.mark.parametrize("number", range(1, 11), ids=lambda number: f"run-{number}")
def test_a_run_reports_the_same_known_flaky_failures_as_the_whole_window_did(
    replanted: HistoryStore, number: int
) -> None:
    from ci_tool.history import queries
    from ci_tool.report.model import build_report, load_report

    run = queries.get_run(replanted, f"r{number}")
    stages = queries.run_stages(replanted, run.run_id)
    tests = {stage.name: queries.stage_tests(replanted, run.run_id, stage.name) for stage in stages}
    old = build_report(run, stages, tests, known=_whole_window(replanted, run.started_at))
    assert load_report(replanted, run.run_id) == old


def test_the_run_reports_mark_the_planted_flakes_where_they_were_known_flaky(replanted: HistoryStore) -> None:
    from ci_tool.report.model import load_report

    marked = [(n, t.test_id) for n in range(1, 11) for t in load_report(replanted, f"r{n}").known_flaky]
    assert marked == [(6, PLANTED), (9, PLANTED), (9, OTHER), (10, OTHER)]


@pytest.mark.parametrize("hours", [2, 4, 6, 8, 11], ids=lambda hours: f"before-hour-{hours}")
def test_the_window_without_ids_reads_the_tests_that_failed_first_and_answers_as_every_tests_tally(
    replanted: HistoryStore, hours: int
) -> None:
    before = DAY_ONE + hours * HOUR
    assert known_flaky(replanted, before=before) == _whole_window(replanted, before)
