"""A small history written by hand (a real SQLite file): four runs of two days, fixed times, so the pages
built from it are the same bytes on every machine. What PR code controls (test names, messages, output,
reasons) carries markup, quotes and text no UTF-8 page can hold, to prove it renders as text.

    r1  passed   CPU-Generic-1: test_ok, test_flip (passed), test_slow 10 s
    r2  failed   CPU-Generic-1: test_flip fails; a test named <script>; a waive; a rerun that passed;
                 A10-PyTorch-1 waits for a runner
    r3  passed   CPU-Generic-2 (same family): test_flip passes again; test_slow 14 s; CPU-Generic-1 reused
                 from r1; a perf case regressed (r1 recorded it at its baseline)
    r4  running  nothing recorded yet
"""

from __future__ import annotations

from pathlib import Path

from ci_tool.history.perf_results import PerfResult, record_perf_results
from ci_tool.history.reuse_sources import REUSED_FROM
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import PerfVerdict, RunState, StageState, TestOutcome

DAY = 1_790_000_000.0  # 2026-09-21, a fixed start
# Bytes a test printed that were not UTF-8 reach the history as U+FFFD (the log reader replaces them);
# pytest spells them out in a test id (`\\xff`).
HOSTILE = '<script>window.__pwned = 1</script> "quoted" \'single\' & \ufffd\ufffd \\xff'

P, F, S = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.SKIPPED


def _stage(
    root: Path, run_id: str, name: str, state: StageState, tests: list[TestRecord], **fields: object
) -> StageRecord:
    """A stage that ran `tests`, its folder at root/run_id/name."""
    counted = [t.final_outcome.counted_as for t in tests]
    return StageRecord(
        run_id, name, state, passed=counted.count(P), failed=counted.count(F), skipped=counted.count(S),
        duration_seconds=sum(t.duration_seconds for t in tests), results_dir=str(root / run_id / name),
        **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def record(store: HistoryStore, run: RunRecord, *stages: tuple[StageRecord, list[TestRecord]]) -> None:
    store.record_run(run, [(stage, tests, run.started_at + 60) for stage, tests in stages])


def write_history(path: Path, results_root: Path) -> Path:
    with HistoryStore(path) as store:
        r1 = [TestRecord("t.py::test_ok", P, 1.0), TestRecord("t.py::test_flip", P, 2.0),
              TestRecord("t.py::test_slow", P, 10.0)]  # fmt: skip
        record(
            store,
            RunRecord("r1", "/bot run", RunState.PASSED, DAY, DAY + 75, "box"),
            (_stage(results_root, "r1", "CPU-Generic-1", StageState.PASSED, r1), r1),
        )
        r2 = [
            TestRecord("t.py::test_ok", P, 1.0),
            TestRecord("t.py::test_flip", F, 2.5, kind="AssertionError", message="flip flopped",
                       signature="AssertionError: flip flopped", output_head="E   assert 1 == 2"),
            TestRecord(f"t.py::test_name[{HOSTILE}]", F, 0.5, kind="ValueError", message=HOSTILE,
                       signature=f"ValueError: {HOSTILE}", output_head=f"E   ValueError: {HOSTILE}\nline two"),
            TestRecord("t.py::test_oom", F, 0.4, rerun_outcome=P),
            TestRecord("t.py::test_waived", S, 0.0, waive_reason="https://bugs.example/1"),
            TestRecord("t.py::test_slow", P, 12.0),
        ]  # fmt: skip
        stage_dir = results_root / "r2" / "CPU-Generic-1"
        details = {
            "logs": {"t.py::test_flip": "parts/p01-main.log", f"t.py::test_name[{HOSTILE}]": "parts/p01-main.log"},
            "reruns": [{"test_id": "t.py::test_oom", "signature": "cuda-oom", "rerun": "passed"}],
            "uncollected": [{"id": "gone.py::test_removed", "reason": "no such file or folder"}],
        }
        record(
            store,
            RunRecord("r2", f"/bot run --stage-list {HOSTILE}", RunState.FAILED, DAY + 3600, DAY + 3700, "box"),
            (_stage(results_root, "r2", "CPU-Generic-1", StageState.FAILED, r2, details=details), r2),
            (StageRecord("r2", "A10-PyTorch-1", StageState.WAITING, reason=f"needs 1 A10 GPU; {HOSTILE}"), []),
        )
        r3 = [TestRecord("t.py::test_flip", P, 2.0), TestRecord("t.py::test_slow", P, 14.0)]
        reused = {REUSED_FROM: "r1"}
        record(
            store,
            RunRecord("r3", "ci-tool run", RunState.PASSED, DAY + 86400, DAY + 86430, ""),
            (_stage(results_root, "r3", "CPU-Generic-2", StageState.PASSED, r3), r3),
            (StageRecord("r3", "CPU-Generic-1", StageState.REUSED, "reused from run r1", details=reused), []),
        )
        case = "cpu-gemma_like-small-decode"
        record_perf_results(
            store,
            [
                PerfResult("r1", "CPU-Generic-1", case, "cpu", "tokens_per_second", 100.0, PerfVerdict.PASSED, DAY + 60,
                           baseline=100.0, threshold=0.1),
                PerfResult("r3", "CPU-Generic-2", case, "cpu", "tokens_per_second", 85.0, PerfVerdict.REGRESSED,
                           DAY + 86460, baseline=100.0, threshold=0.1, note=f"15% below its baseline {HOSTILE}"),
            ],
        )  # fmt: skip
        store.start_run(RunRecord("r4", "ci-tool stage run CPU-Generic-1", RunState.RUNNING, DAY + 90000))
    log = stage_dir / "parts" / "p01-main.log"
    log.parent.mkdir(parents=True)
    log.write_text("the log of the process that ran test_flip\n")
    return path
