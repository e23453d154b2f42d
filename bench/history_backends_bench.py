"""The history on SQLite and on PostgreSQL (a throw-away local cluster, as the tests start it):

    writers   W processes at once, each recording its own run with one stage of TESTS tests, against one
              writer: rows lost (expected W x TESTS, found), wall seconds, and the ratio
    reads     over RUNS runs of TESTS_PER_RUN tests (bulk-filled, 1,000 runs a transaction; a test in
              seven stays red, one in three passes on its rerun): a reuse lookup and what `stage run`
              reads to plan its reuse, the durations export that planning reads, `ci-tool flaky report`,
              one run page's known-flaky read before and after it asked about its failures only (best of
              REPEATS), and a dashboard (`ci-tool site`) of the newest SITE_RUNS runs, built and then
              rebuilt with no run changed (once each), in seconds

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
from ci_tool.history.backend import Writer  # noqa: E402
from ci_tool.history.locator import History, PostgresUrl  # noqa: E402
from ci_tool.history.reuse_sources import ReuseKey, reuse_of  # noqa: E402
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord  # noqa: E402
from ci_tool.outcomes import RunState, StageState, TestOutcome  # noqa: E402
from ci_tool.report.model import load_report  # noqa: E402
from tests.ci_tool.history.postgres_server import PostgresServer  # noqa: E402

TESTS = 500
REPEATS = 3
SITE_RUNS = 200  # `ci-tool site`'s default
START = 1_790_000_000.0
RUN_SPACING_SECONDS = 600  # 10,000 runs: 69 days, so the 30-day window holds about 4,300 of them
FILL_BATCH = 1_000  # runs a fill transaction
STAGE = "A10-PyTorch-1"


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


Rows = tuple[tuple[object, ...], tuple[object, ...], list[tuple[object, ...]]]  # a run's, its stage's, its tests'


def _run_rows(index: int, tests_per_run: int) -> Rows:
    """One run's row, its stage's and its tests' (the store's columns), as a fill writes them."""
    run_id = f"r{index:06d}"
    started = START + index * RUN_SPACING_SECONDS
    tests = []
    for t in range(tests_per_run):
        rerun_flake = t == 0 and index % 3 == 0  # fails first, passes on its rerun
        red_flake = t == 1 and index % 7 == 0  # stays red one run in seven: a known flaky failure on a page
        outcome = TestOutcome.FAILED if rerun_flake or red_flake else TestOutcome.PASSED
        rerun = TestOutcome.PASSED if rerun_flake else None
        signature = "AssertionError: flaky" if outcome is TestOutcome.FAILED else ""
        tests.append((run_id, STAGE, f"tests/m{t % 20}.py::test_{t}", outcome, rerun, 0.1 + (t % 10) / 10, None,
                      signature.split(":")[0], "", signature, "", started + 200))  # fmt: skip
    failed = sum(1 for row in tests if row[3] is TestOutcome.FAILED and row[4] is None)
    state = RunState.FAILED if failed else RunState.PASSED
    run = (run_id, "/bot run", state, started, started + 300, "bench", "{}", f"c{index}", "", "{}")
    stage = (run_id, STAGE, StageState.FAILED if failed else StageState.PASSED, "", started, 250.0,
             tests_per_run - failed, failed, 0, "", "{}")  # fmt: skip
    return run, stage, tests


def populate(history: History, runs: int, tests_per_run: int) -> None:
    """Bulk fill (not what is measured): FILL_BATCH runs a transaction, through the store's own writer."""
    with HistoryStore(history) as store:
        for first in range(0, runs, FILL_BATCH):
            batch = [_run_rows(index, tests_per_run) for index in range(first, min(runs, first + FILL_BATCH))]

            def fill(db: Writer, batch: list[Rows] = batch) -> None:
                db.executemany(_insert("runs", _RUNS), [run for run, _, _ in batch])
                db.executemany(_insert("stages", _STAGES), [stage for _, stage, _ in batch])
                db.executemany(_insert("test_results", _TESTS), [test for _, _, tests in batch for test in tests])

            store.write(fill)


_RUNS = "run_id, command, state, started_at, finished_at, host, details_json, code_commit, code_diff, scope"
_STAGES = ("run_id, name, state, reason, started_at, duration_seconds, passed, failed, skipped, results_dir, "
           "details_json")  # fmt: skip
_TESTS = ("run_id, stage, test_id, outcome, rerun_outcome, duration_seconds, waive_reason, kind, message, signature, "
          "output_head, recorded_at")  # fmt: skip


def _insert(table: str, columns: str) -> str:
    return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' for _ in columns.split(','))})"


def best(work: Callable[[], object]) -> float:
    """The best of REPEATS runs; a read of a second or more runs once (the bench stays a few minutes)."""
    times: list[float] = []
    while len(times) < REPEATS and (not times or times[-1] < 1.0):
        begun = time.perf_counter()
        work()
        times.append(time.perf_counter() - begun)
    return min(times)


def reads(label: str, history: History, runs: int, folder: Path) -> None:
    """Each read path's best time, printed as it is measured."""
    name = history.url if isinstance(history, PostgresUrl) else str(history)
    newest = START + (runs - 1) * RUN_SPACING_SECONDS
    page_run = f"r{(runs - 1) // 7 * 7:06d}"  # the newest run with a red flake: its page marks it known flaky

    output = str(folder / f"site-{label}")

    def site() -> None:  # the newest SITE_RUNS runs' pages: first into a new folder, then again over it
        with contextlib.redirect_stdout(io.StringIO()):
            main(["site", "--history", name, "--output", output, "--runs", str(SITE_RUNS)])

    with HistoryStore(history, read_only=True) as store:
        page_started = queries.get_run(store, page_run).started_at
        every_test = [row[0] for row in store.rows("SELECT DISTINCT test_id FROM test_results")]

        key = ReuseKey(f"c{runs // 2}", "", "{}")

        def reuse_plan() -> None:  # what `ci-tool run` reads to plan its reuse: the source run and its passed tests
            assert reuse_of(store, key, inputs_of=lambda _stage: "") is not None

        measured: dict[str, Callable[[], object]] = {
            "reuse lookup": lambda: reuse_of(store, key, inputs_of=lambda _stage: "", tests=False),
            "reuse plan": reuse_plan,
            "durations export": lambda: (queries.export_durations(store), queries.export_process_costs(store)),
            "flaky report": lambda: flakiness.flake_stats(
                store, since=newest - flakiness.FLAKE_WINDOW_DAYS * flakiness.SECONDS_PER_DAY
            ),
            # what each run page computed before: every test's rows of the 30 days before the run, tallied
            "page known-flaky, every test (before)": lambda: flakiness.known_flaky(
                store, before=page_started, test_ids=every_test
            ),
            "page report (known-flaky of its failures)": lambda: load_report(store, page_run),
        }
        for what, work in measured.items():
            print(f"  {label:10}  {what:42} {best(work):8.4f} s", flush=True)
    for what in ("site build (first)", "site rebuild (no run changed)"):  # once each
        begun = time.perf_counter()
        site()
        print(f"  {label:10}  {what:42} {time.perf_counter() - begun:8.4f} s (newest {SITE_RUNS} runs)", flush=True)


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
        print(f"reads over {options.runs} runs x {options.tests_per_run} tests (s; best of {REPEATS}, once if 1 s)")
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
