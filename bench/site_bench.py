"""`ci-tool site` over a history of 1,000 runs: the first build, a rebuild with nothing new, and a rebuild
after one more run (what CI does after each run). The history is synthetic but shaped like a real one:
each run has STAGES stages of TESTS tests, a few failures with signatures and output, a flaky test that
flips and one that passes on rerun, a waiting stage every tenth run.

    .venv/bin/python bench/site_bench.py [--runs 1000] [--repeats 3]

Prints the seconds of each build (best of REPEATS, each in a fresh folder for the first build) and the
per-run-page cost. Exit status 1 when the first build of 1,000 runs takes 60 s or more.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ci_tool.cli import main  # noqa: E402
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord  # noqa: E402
from ci_tool.outcomes import RunState, StageState, TestOutcome  # noqa: E402

STAGES, TESTS = 4, 60
GOAL_SECONDS = 60.0
START = 1_790_000_000.0


def run_records(index: int) -> tuple[RunRecord, list[tuple[StageRecord, list[TestRecord], float]]]:
    run_id = f"2026{index:06d}-000000-{index % 65536:04x}"
    started = START + index * 600
    stages = []
    failed_any = False
    for s in range(STAGES):
        name = f"A10-PyTorch-{s + 1}"
        tests = []
        for t in range(TESTS):
            test_id = f"tests/kv/test_pool_{t // 10}.py::test_case[{t}]"
            outcome, rerun, signature, output = TestOutcome.PASSED, None, "", ""
            if t == 0 and index % 3 == 0:  # flips: fails every third run
                outcome, signature, output = TestOutcome.FAILED, "AssertionError: pool leaked <n> blocks", "E   x\n" * 8
            if t == 1 and index % 7 == 0:  # passes on rerun
                outcome, rerun = TestOutcome.FAILED, TestOutcome.PASSED
            tests.append(TestRecord(test_id, outcome, 0.5 + (t % 13) * 0.7 + (index % 5) * 0.01, rerun,
                                    signature=signature, message=signature, output_head=output))  # fmt: skip
        failed = sum(1 for t in tests if t.final_outcome is TestOutcome.FAILED)
        failed_any |= failed > 0
        state = StageState.FAILED if failed else StageState.PASSED
        stage = StageRecord(run_id, name, state, passed=len(tests) - failed, failed=failed,
                            duration_seconds=sum(t.duration_seconds for t in tests),
                            results_dir=f".ci-tool/runs/{run_id}/{name}")  # fmt: skip
        stages.append((stage, tests, started + 60))
    if index % 10 == 0:
        stages.append(
            (StageRecord(run_id, "DGX_H100-PyTorch-1", StageState.WAITING, reason="needs a GPU"), [], started)
        )
    run_state = RunState.FAILED if failed_any else RunState.PASSED
    return RunRecord(run_id, "/bot run", run_state, started, started + 300, "bench"), stages


def write_history(path: Path, runs: int) -> None:
    with HistoryStore(path) as store:
        for index in range(runs):
            store.record_run(*run_records(index))


def build(history: Path, output: Path) -> tuple[float, str]:
    out = io.StringIO()
    began = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = main(["site", "--output", str(output), "--history", str(history), "--runs", "100000"])
    took = time.perf_counter() - began
    if code != 0:
        raise SystemExit(f"ci-tool site exited {code}")
    return took, out.getvalue().strip()


def main_bench() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        history = Path(folder) / "history.sqlite"
        began = time.perf_counter()
        write_history(history, args.runs)
        print(f"history: {args.runs} runs x {STAGES} stages x {TESTS} tests written in "
              f"{time.perf_counter() - began:.1f} s ({os.path.getsize(history) / 1e6:.1f} MB)")  # fmt: skip
        first = []
        for repeat in range(args.repeats):
            took, line = build(history, Path(folder) / f"site{repeat}")
            first.append(took)
        site = Path(folder) / "site0"
        unchanged = min(build(history, site)[0] for _ in range(args.repeats))
        with HistoryStore(history) as store:
            store.record_run(*run_records(args.runs))
        one_more, one_more_line = build(history, site)
        print(f"first build:            {min(first):6.2f} s  ({min(first) / args.runs * 1000:.1f} ms a run)  {line}")
        print(f"rebuild, nothing new:   {unchanged:6.2f} s")
        print(f"rebuild after one run:  {one_more:6.2f} s  {one_more_line}")
        size = sum(p.stat().st_size for p in site.rglob("*") if p.is_file())
        print(f"site: {sum(1 for _ in site.rglob('*.html'))} pages, {size / 1e6:.1f} MB")
    return 0 if args.runs < 1000 or min(first) < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main_bench())
