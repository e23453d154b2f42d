"""Time to the first failure: a stage's tests in today's order (the list's) against the likelihood order
(the history's recent failures first, then the tests whose touch records ran a changed file).

On a copy of this repository (its tracked files, a git repository of its own whose `main` is the copy as it
is), the stage (CPU-Generic-1 by default) runs once with `--record-touches` into a history: the touch
records. DECOYS other tests get a failure recorded a day earlier (other pull requests' failures: they pass
now, and rank first). Then each planted fault, one at a time, in the copy's work tree:

    recent   a test that failed in the pull request's previous run fails again (an `assert False` planted
             at its top); the previous run is the today's-order run of the same fault, recorded in the
             history the likelihood run reads; no change is given (no touch tier)
    touch    a mutation of a source function (a flipped comparison, an off-by-one); the stage runs with
             `--base main`, so the change is that file and its touch records say which tests ran it;
             each order reads a fresh copy of the history (no earlier run of the fault)

Each run is the real `ci-tool stage run` (`--disable-reuse-test`; today's order adds `--no-reorder`) as a
process, with PYTHONPATH on the copy so the planted code is what runs. The time is from its start to the
first failed or errored test in its events file (polled every POLL_SECONDS); the run is then interrupted,
as the stage's first failure is all that is measured. The planted faults never touch this repository.

    .venv/bin/python bench/first_failure_bench.py [--stage CPU-Generic-1] [--decoys 8] [--only NAME ...]
        [--whole-change PATH]

Prints one row a fault and the median ratio (today / likelihood); the goal is the likelihood order at most
half of today's (a ratio of 2 or more). `--whole-change PATH` also runs the stage to its end in both orders,
with no fault and a change to PATH (a comment appended): what moving the suspects first costs the whole
stage (module fixtures set up again).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import RunState, StageState, TestOutcome

REPOSITORY = Path(__file__).resolve().parents[1]
POLL_SECONDS = 0.05
RUN_LIMIT_SECONDS = 1200  # a safety net: a stage that never fails ends on its own well before
DAY = 86_400.0


@dataclass(frozen=True)
class Fault:
    name: str
    kind: str  # "recent" or "touch"
    path: str  # the file planted in
    test: str = ""  # recent: the test function that fails again
    old: str = ""  # touch: the text replaced, once
    new: str = ""


FAULTS = (
    Fault("pool can_allocate <= -> <", "touch", "src/kvengine/pool.py",
          old="return num_blocks <= len(self._free)", new="return num_blocks < len(self._free)"),
    Fault("window blocks off by one", "touch", "src/kvengine/lifecycle.py",
          old="(self.window_tokens + tokens_per_block - 2)", new="(self.window_tokens + tokens_per_block - 1)"),
    Fault("shard index off by one", "touch", "ci_tool/stages/shard.py",
          old="return self.shards[index - 1]", new="return self.shards[index - 2]"),
    Fault("stage name gpu count < 1 -> < 0", "touch", "ci_tool/stages/names.py",
          old="        if gpu_count < 1:", new="        if gpu_count < 0:"),
    Fault("engine test fails again", "recent", "tests/kvengine/test_pool_request.py",
          test="test_resize_is_all_or_nothing_across_groups"),
    Fault("junit test fails again", "recent", "tests/ci_tool/run/test_junit.py",
          test="test_torn_stream_keeps_finished_testcases"),
    Fault("stage-name test fails again", "recent", "tests/ci_tool/stages/test_names.py",
          test="test_mode_comes_from_the_exact_tag"),
)  # fmt: skip


def git(copy: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=copy, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout


def copy_repository(copy: Path) -> None:
    """The tracked files as they are now, committed on `main` of a repository of the copy's own."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPOSITORY, check=True, capture_output=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPOSITORY / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    git(copy, "init", "-q", "-b", "main")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "the copy")


def stage_command(copy: Path, stage: str, history: Path, results: Path, *extra: str) -> list[str]:
    facts = copy.parent / "cpu.json"  # beside the copy: a file in it would be part of the change
    facts.write_text(json.dumps({"gpu": None, "system_gpu_count": 0}))
    return [
        sys.executable, "-m", "ci_tool", "stage", "run", stage, f"--system-info={facts}", f"--history={history}",
        f"--results-dir={results}", "--disable-reuse-test", *extra,
    ]  # fmt: skip


def environment(copy: Path) -> dict[str, str]:
    """The copy's ci_tool and kvengine first on the path: the planted code is what the stage imports."""
    return {**os.environ, "PYTHONPATH": f"{copy}{os.pathsep}{copy / 'src'}"}


def record_touches(copy: Path, stage: str, history: Path, results: Path) -> float:
    started = time.monotonic()
    subprocess.run(stage_command(copy, stage, history, results, "--record-touches"), cwd=copy, env=environment(copy),
                   check=True, capture_output=True, timeout=RUN_LIMIT_SECONDS)  # fmt: skip
    return time.monotonic() - started


def add_decoys(history: Path, stage: str, count: int, seed: int, planted: set[str]) -> list[str]:
    """Failures of `count` other tests of the history, a day ago, in runs of other pull requests."""
    with HistoryStore(history) as store:
        known = sorted({row[0] for row in store.rows("SELECT test_id FROM test_results")} - planted)
        chosen = random.Random(seed).sample(known, count)
        now = time.time()
        for number, test_id in enumerate(chosen):
            started = now - DAY + number
            run_id = f"decoy-{number}"
            record = TestRecord(test_id, TestOutcome.FAILED, 1.0, kind="AssertionError", signature="AssertionError")
            stages = [(StageRecord(run_id, stage, StageState.FAILED, duration_seconds=60.0), [record], started)]
            store.record_run(RunRecord(run_id, "/bot run", RunState.FAILED, started, started + 60), stages)
    return chosen


def plant(copy: Path, fault: Fault) -> None:
    path = copy / fault.path
    text = path.read_text()
    if fault.kind == "touch":
        if text.count(fault.old) != 1:
            raise SystemExit(f"{fault.path}: expected {fault.old!r} once, found it {text.count(fault.old)} times")
        path.write_text(text.replace(fault.old, fault.new))
        return
    function = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == fault.test)
    first = function.body[0]
    lines = text.splitlines(keepends=True)
    indent = " " * first.col_offset
    lines.insert(first.lineno - 1, f'{indent}assert False, "planted fault"\n')
    path.write_text("".join(lines))


def first_failure(results: Path) -> bool:
    for events in results.glob("*/*/parts/*.events.jsonl"):
        for line in events.read_text().splitlines():
            if '"finish"' in line and json.loads(line).get("outcome") in (TestOutcome.FAILED, TestOutcome.ERROR):
                return True
    return False


def time_to_first_failure(command: list[str], copy: Path, results: Path) -> float | None:
    """Seconds from the command's start to its stage's first failing test (None: the stage ended without one)."""
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=copy, env=environment(copy), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        while time.monotonic() - started < RUN_LIMIT_SECONDS:
            if first_failure(results):
                return time.monotonic() - started
            if process.poll() is not None:
                return time.monotonic() - started if first_failure(results) else None
            time.sleep(POLL_SECONDS)
        return None
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)  # the stage stops and records what it ran
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def measure(fault: Fault, copy: Path, work: Path, stage: str, base_history: Path) -> tuple[float | None, float | None]:
    """(today's order, the likelihood order) for one fault."""
    plant(copy, fault)
    try:
        histories = [work / f"{fault.kind}-today.sqlite", work / f"{fault.kind}-likelihood.sqlite"]
        for history in histories:
            shutil.copy2(base_history, history)
        if fault.kind == "recent":
            histories[1] = histories[0]  # the likelihood run follows the failed run of today's order
        change = ("--base=main",) if fault.kind == "touch" else ()
        found: list[float | None] = []
        for label, history, order in zip(("today", "likelihood"), histories, (("--no-reorder",), ()), strict=True):
            results = work / f"runs-{label}"
            shutil.rmtree(results, ignore_errors=True)
            found.append(
                time_to_first_failure(stage_command(copy, stage, history, results, *change, *order), copy, results)
            )
        return found[0], found[1]
    finally:
        git(copy, "checkout", "--", fault.path)


def time_to_end(copy: Path, work: Path, stage: str, base_history: Path, path: str) -> tuple[float, float]:
    """(today's order, the likelihood order): the whole stage's seconds, no fault, `path` changed."""
    target = copy / path
    target.write_text(target.read_text() + "# a change that changes nothing\n")
    try:
        found = []
        for label, order in (("today", ("--no-reorder",)), ("likelihood", ())):
            history = work / f"whole-{label}.sqlite"
            shutil.copy2(base_history, history)
            command = stage_command(copy, stage, history, work / f"runs-whole-{label}", "--base=main", *order)
            started = time.monotonic()
            subprocess.run(command, cwd=copy, env=environment(copy), capture_output=True, timeout=RUN_LIMIT_SECONDS)
            found.append(time.monotonic() - started)
        return found[0], found[1]
    finally:
        git(copy, "checkout", "--", path)


def shown(seconds: float | None) -> str:
    return "not caught" if seconds is None else f"{seconds:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="CPU-Generic-1")
    parser.add_argument("--decoys", type=int, default=8, help="other tests that failed a day ago")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--only", nargs="*", help="the faults to plant (by name) [default: all]")
    parser.add_argument("--whole-change", metavar="PATH", help="also run the whole stage with PATH changed")
    args = parser.parse_args()
    faults = [f for f in FAULTS if not args.only or f.name in args.only]
    with tempfile.TemporaryDirectory(prefix="first-failure-") as folder:
        work = Path(folder)
        copy = work / "repo"
        copy.mkdir()
        copy_repository(copy)
        base_history = work / "base.sqlite"
        seconds = record_touches(copy, args.stage, base_history, work / "runs-touches")
        planted = {f"{f.path}::{f.test}" for f in FAULTS if f.kind == "recent"}
        decoys = add_decoys(base_history, args.stage, args.decoys, args.seed, planted)
        print(
            f"{args.stage} with --record-touches: {seconds:.0f} s; {len(decoys)} decoy failures (seed {args.seed})",
            flush=True,
        )
        print(f"{'fault':34} {'kind':6} {'today s':>10} {'likelihood s':>13} {'ratio':>6}")
        ratios = []
        for fault in faults:
            today, likely = measure(fault, copy, work, args.stage, base_history)
            ratio = today / likely if today is not None and likely is not None else None
            ratios += [ratio] if ratio is not None else []
            print(f"{fault.name:34} {fault.kind:6} {shown(today):>10} {shown(likely):>13} "
                  f"{'-' if ratio is None else f'{ratio:.1f}x':>6}", flush=True)  # fmt: skip
        if args.whole_change:
            today, likely = time_to_end(copy, work, args.stage, base_history, args.whole_change)
            print(f"whole stage, {args.whole_change} changed: today {today:.1f} s, likelihood {likely:.1f} s "
                  f"({likely / today - 1:+.0%})")  # fmt: skip
    if ratios:
        print(f"median ratio {statistics.median(ratios):.1f}x, smallest {min(ratios):.1f}x (goal: >= 2x)")
    return 0 if ratios and statistics.median(ratios) >= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
