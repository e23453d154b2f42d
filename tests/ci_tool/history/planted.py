"""A hand-written history with a planted flaky test, written through the real store into a real SQLite file.

A10-PyTorch-1 (1 GPU, 600 s a run), runs r1..r6, one an hour from DAY_ONE:
  a.py::test_planted   fails runs 3 and 6 (one run in three), AssertionError, stays red
  a.py::test_stable    always passes
  a.py::test_broken    always fails: broken, not flaky
  a.py::test_waived    skipped by a waive: not counted
DGX_H100-4_GPUs-PyTorch-1 (4 GPUs), the same runs:
  b.py::test_rerun     first attempt fails in runs 1, 3 and 5 (half), 6 s each, passes on its rerun
"""

from __future__ import annotations

import datetime

from ci_tool.history.flakiness import FlakeStats, SignatureCount
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import RunState, StageState, TestOutcome

DAY_ONE = datetime.datetime(2027, 1, 10, tzinfo=datetime.UTC).timestamp()
HOUR = 3600.0
PLANTED = "a.py::test_planted"
RERUN = "b.py::test_rerun"
PLANTED_SIGNATURE = "AssertionError: planted flake on run <n>"
RERUN_SIGNATURE = "ConnectionResetError: Connection reset by peer"
A10 = "A10-PyTorch-1"
H100 = "DGX_H100-4_GPUs-PyTorch-1"

PASSED, FAILED, SKIPPED = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.SKIPPED


def record_run(
    store: HistoryStore,
    run_id: str,
    started_at: float,
    stages: dict[str, tuple[float, list[TestRecord]]],
) -> None:
    """One finished run: each stage with its duration in seconds and its tests."""
    recorded = [
        (
            StageRecord(
                run_id,
                name,
                StageState.FAILED if any(t.final_outcome.is_failure for t in tests) else StageState.PASSED,
                duration_seconds=seconds,
            ),
            tests,
            started_at + 1,
        )
        for name, (seconds, tests) in stages.items()
    ]
    store.record_run(RunRecord(run_id, "/bot run", RunState.FAILED, started_at, started_at + 700), recorded)


def failed(test_id: str, signature: str, seconds: float = 1.0, rerun: TestOutcome | None = None) -> TestRecord:
    return TestRecord(test_id, FAILED, seconds, rerun_outcome=rerun, kind=signature.split(":")[0], signature=signature)


def plant(store: HistoryStore, runs: int = 6) -> None:
    for number in range(1, runs + 1):
        planted = failed(PLANTED, PLANTED_SIGNATURE, 2.0) if number % 3 == 0 else TestRecord(PLANTED, PASSED, 2.0)
        a10 = [
            planted,
            TestRecord("a.py::test_stable", PASSED, 1.0),
            failed("a.py::test_broken", "ValueError: broken"),
            TestRecord("a.py::test_waived", SKIPPED, 0.0, waive_reason="https://bugs.example/1"),
        ]
        rerun = failed(RERUN, RERUN_SIGNATURE, 6.0, rerun=PASSED) if number % 2 else TestRecord(RERUN, PASSED, 6.0)
        started = DAY_ONE + (number - 1) * HOUR
        record_run(store, f"r{number}", started, {A10: (600.0, a10), H100: (300.0, [rerun])})


# What the history measures of the planted flake over r1..r6.
PLANTED_STATS = FlakeStats(
    test_id=PLANTED,
    gpu="A10",
    runs=6,
    failures=2,
    passed_on_rerun=0,
    flips=3,
    first_seen_run="r3",
    first_seen_at=DAY_ONE + 2 * HOUR,
    last_seen_run="r6",
    last_seen_at=DAY_ONE + 5 * HOUR,
    signatures=(SignatureCount(PLANTED_SIGNATURE, 2),),
    lost_gpu_minutes=20.0,  # two red runs of a 600 s stage on one GPU: the stage runs again
)
