"""Measured flakiness over a real history (SQLite and PostgreSQL) with a planted flaky test (planted.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.history.flakiness import StageDevices, flake_stats, known_flaky, stage_devices
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
