"""The history on SQLite and on PostgreSQL (a throw-away local cluster, as the tests start it):

    writers   W processes at once, each recording its own run with one stage of TESTS tests, against one
              writer: rows lost (expected W x TESTS, found), wall seconds, and the ratio
    reads     over RUNS runs of TESTS_PER_RUN tests: a reuse lookup, the durations read for planning, the
              flaky report (best of REPEATS), and the first build of a dashboard (`ci-tool site`) of the
              newest SITE_RUNS runs (once), in seconds

    .venv/bin/python bench/history_backends_bench.py [--writers 16] [--runs 10000] [--tests-per-run 100]

Needs PostgreSQL's server binaries and psycopg (`pip install -e '.[postgres]'`); as root the server runs
as the `postgres` user. Results go to docs/PERF.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ci_tool.cli import main  # noqa: E402
from ci_tool.history import flakiness, queries  # noqa: E402
from ci_tool.history.locator import History, PostgresUrl  # noqa: E402
from ci_tool.history.reuse import latest_run_of  # noqa: E402
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord  # noqa: E402
from ci_tool.outcomes import RunState, StageState, TestOutcome  # noqa: E402
from tests.ci_tool.history.postgres_server import PostgresServer  # noqa: E402

TESTS = 500
REPEATS = 3
SITE_RUNS = 50
START = 1_790_000_000.0


def _record(history: str, writer: int) -> None:
    with HistoryStore(history) as store:
        run_id = f"w{writer:03d}"
        store.start_run(RunRecord(run_id, "stage run", RunState.RUNNING, START + writer))
        tests = [TestRecord(f"tests/t{writer % 7}.py::test_{i}", TestOutcome.PASSED, 0.01 * i) for i in range(TESTS)]
        store.record_stage(
            StageRecord(run_id, "CPU-Generic-1", StageState.PASSED, passed=TESTS), tests, recorded_at=START
        )
        store.finish_run(run_id, state=RunState.PASSED, finished_at=START + 60)


def writers(history: str, count: int) -> tuple[int, float]:
    """(test rows recorded, wall seconds) of `count` writers at once."""
    begun = time.perf_counter()
    with ProcessPoolExecutor(count) as pool:
        for done in [pool.submit(_record, history, w) for w in range(count)]:
            done.result()
    took = time.perf_counter() - begun
    with HistoryStore(history, read_only=True) as store:
        found = store.row("SELECT count(*) FROM test_results")
    return int(found[0]) if found else 0, took


def populate(history: History, runs: int, tests_per_run: int) -> None:
    with HistoryStore(history) as store:
        for index in range(runs):
            run_id = f"r{index:06d}"
            started = START + index * 600
            tests = []
            for t in range(tests_per_run):
                flaky = t == 0 and index % 3 == 0
                outcome = TestOutcome.FAILED if flaky else TestOutcome.PASSED
                tests.append(TestRecord(f"tests/m{t % 20}.py::test_{t}", outcome, 0.1 + (t % 10) / 10,
                                        rerun_outcome=TestOutcome.PASSED if flaky else None))  # fmt: skip
            run = RunRecord(
                run_id, "/bot run", RunState.PASSED, started, started + 300, code_commit=f"c{index}", scope="{}"
            )
            store.record_run(run, [(StageRecord(run_id, "CPU-Generic-1", StageState.PASSED), tests, started + 200)])


def best(work: Callable[[], object]) -> float:
    times = []
    for _ in range(REPEATS):
        begun = time.perf_counter()
        work()
        times.append(time.perf_counter() - begun)
    return min(times)


def reads(label: str, history: History, runs: int, folder: Path) -> None:
    """Each read path's best time, printed as it is measured."""
    name = history.url if isinstance(history, PostgresUrl) else str(history)

    def site() -> None:  # a first build of the newest SITE_RUNS runs' pages into a new folder
        output = str(folder / f"site-{time.monotonic_ns()}")
        with contextlib.redirect_stdout(io.StringIO()):
            main(["site", "--history", name, "--output", output, "--runs", str(SITE_RUNS)])

    def flaky_report() -> None:  # `ci-tool flaky report`'s default window
        flakiness.flake_stats(store, since=START + runs * 600 - flakiness.FLAKE_WINDOW_DAYS * 86_400)

    with HistoryStore(history, read_only=True) as store:
        measured: dict[str, Callable[[], object]] = {
            "reuse lookup": lambda: latest_run_of(store, commit=f"c{runs // 2}", diff_hash="", scope="{}"),
            "durations read": lambda: queries.export_durations(store),
            "flaky report": flaky_report,
        }
        for what, work in measured.items():
            print(f"  {label:10}  {what:15} {best(work):8.4f} s", flush=True)
    begun = time.perf_counter()
    site()  # once: it takes seconds
    print(f"  {label:10}  {'site build':15} {time.perf_counter() - begun:8.4f} s (newest {SITE_RUNS} runs)", flush=True)


def main_bench() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--tests-per-run", type=int, default=100)
    options = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="history-bench-"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so that `finally` stops the server
    server = PostgresServer()
    try:
        targets: list[tuple[str, Callable[[str], str]]] = [
            ("SQLite", lambda name: str(folder / f"{name}.sqlite")),
            ("PostgreSQL", lambda name: server.create_database(name)),
        ]
        print(f"{options.writers} writers x {TESTS} tests (one run and stage each) vs 1 writer")
        for label, make in targets:
            one_rows, one = writers(make("one"), 1)
            many_rows, many = writers(make("many"), options.writers)
            lost = options.writers * TESTS - many_rows
            print(f"  {label:10}  1 writer {one:6.2f} s ({one_rows} rows)   {options.writers} writers {many:6.2f} s "
                  f"({many_rows} rows, {lost} lost)   ratio {many / one:5.2f}x", flush=True)  # fmt: skip
        print(f"reads over {options.runs} runs x {options.tests_per_run} tests (best of {REPEATS}, seconds)")
        for label, make in targets:
            location = make("reads")
            history: History = PostgresUrl(location) if location.startswith("postgresql://") else Path(location)
            begun = time.perf_counter()
            populate(history, options.runs, options.tests_per_run)
            filled = time.perf_counter() - begun
            print(f"  {label:10}  filled in {filled:.1f} s", flush=True)
            reads(label, history, options.runs, folder)
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main_bench()
