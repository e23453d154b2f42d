"""The SQLite history on a real file: schema, writes, parallel writers, queries."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tool.errors import HistoryError
from ci_tool.history import queries, schema
from ci_tool.history.ledger import DispatchKey, DispatchRecord, find_dispatch, record_dispatch
from ci_tool.history.locator import History, PostgresUrl
from ci_tool.history.reuse_sources import ReuseKey, reuse_of
from ci_tool.history.store import SCHEMA_VERSION, HistoryStore, RunRecord, StageRecord, TestRecord, history_path
from ci_tool.outcomes import DispatchState, RunState
from tests.ci_tool.file_modes import TIMEOUT_SECONDS, where_modes_bind


@pytest.fixture
def store(history_at: History) -> HistoryStore:
    """A new history, on SQLite and on PostgreSQL in turn (conftest.py)."""
    with HistoryStore(history_at) as opened:
        yield opened


def add_run(store: HistoryStore, run_id: str, started_at: float, stage: str, tests: list[TestRecord]) -> None:
    store.start_run(RunRecord(run_id, "/bot run", "running", started_at))
    store.record_stage(StageRecord(run_id, stage, "passed"), tests, recorded_at=started_at + 1)
    store.finish_run(run_id, state="passed", finished_at=started_at + 2)


@pytest.mark.parametrize(
    ("option", "environ", "expected"),
    [
        ("x.sqlite", {"CI_TOOL_HISTORY": "env.sqlite"}, Path("x.sqlite")),
        (None, {"CI_TOOL_HISTORY": "env.sqlite"}, Path("env.sqlite")),
        (None, {}, Path(".ci-tool/history.sqlite")),
    ],
    ids=["option", "environment", "default"],
)
def test_history_path(option: str | None, environ: dict[str, str], expected: Path) -> None:
    assert history_path(option, environ) == expected


def test_wal(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        assert store.db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_schema_version(store: HistoryStore) -> None:
    assert store.rows("SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]


def test_reopen_keeps_one_version_row(tmp_path: Path) -> None:
    HistoryStore(tmp_path / "h.sqlite").close()
    with HistoryStore(tmp_path / "h.sqlite") as again:
        assert again.db.execute("SELECT count(*) FROM schema_version").fetchone() == (1,)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    HistoryStore(tmp_path / "h.sqlite").close()
    with sqlite3.connect(tmp_path / "h.sqlite") as db:
        db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(HistoryError) as error:
        HistoryStore(tmp_path / "h.sqlite")
    assert str(error.value) == (
        f"{tmp_path}/h.sqlite: expected history schema version {SCHEMA_VERSION} or older, found 99 "
        "Hint: a newer ci-tool wrote this file; upgrade ci-tool or pass another --history"
    )


def test_missing_file_without_create(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="expected a history file, found none"):
        HistoryStore(tmp_path / "none.sqlite", create=False)


def test_run_stage_and_tests_round_trip(store: HistoryStore) -> None:
    tests = [
        TestRecord("a.py::t1", "passed", 1.5),
        TestRecord("a.py::t2", "failed", 0.5, rerun_outcome="passed", kind="RuntimeError", signature="sig"),
        TestRecord("a.py::t3", "skipped", 0.0, waive_reason="https://bugs/1"),
    ]
    store.start_run(RunRecord("r1", "/bot run", "running", 100.0, host="box", details={"fail_fast": True}))
    store.record_stage(StageRecord("r1", "CPU-PyTorch-1", "unstable", passed=2, skipped=1), tests, recorded_at=101.0)
    store.record_stage(StageRecord("r1", "A10-PyTorch-1", "waiting", reason="no A10 runner here"), recorded_at=101.0)
    store.finish_run("r1", state="unstable", finished_at=102.0)
    assert queries.get_run(store, "r1") == RunRecord(
        "r1", "/bot run", "unstable", 100.0, 102.0, "box", {"fail_fast": True}
    )
    assert [s.name for s in queries.run_stages(store, "r1")] == ["CPU-PyTorch-1", "A10-PyTorch-1"]
    assert queries.stage_tests(store, "r1", "CPU-PyTorch-1") == tests


def test_recording_a_stage_again_replaces_it(store: HistoryStore) -> None:
    store.start_run(RunRecord("r1", "x", "running", 1.0))
    store.record_stage(StageRecord("r1", "S-1", "failed"), [TestRecord("a", "failed", 1.0)], recorded_at=2.0)
    store.record_stage(StageRecord("r1", "S-1", "passed"), [TestRecord("b", "passed", 1.0)], recorded_at=3.0)
    assert [t.test_id for t in queries.stage_tests(store, "r1", "S-1")] == ["b"]


def test_unknown_run_suggests_close_ids(store: HistoryStore) -> None:
    store.start_run(RunRecord("20260101-000000-abcd", "x", "passed", 1.0))
    with pytest.raises(HistoryError) as error:
        queries.get_run(store, "20260101-000000-abce")
    assert error.value.message == "expected a recorded run id, found '20260101-000000-abce'"
    assert error.value.hint == "did you mean '20260101-000000-abcd'?"


def _write_stages(path: str, writer: int, stages: int, tests: int) -> None:
    with HistoryStore(path) as store:
        for index in range(stages):
            run_id = f"w{writer}-r{index}"
            store.start_run(RunRecord(run_id, "x", "running", float(index)))
            records = [TestRecord(f"t{writer}-{index}-{n}", "passed", 0.1) for n in range(tests)]
            store.record_stage(StageRecord(run_id, f"S-{writer}", "passed", passed=tests), records, recorded_at=1.0)
            store.finish_run(run_id, state="passed", finished_at=2.0)


def test_parallel_writers_lose_nothing(history_at: History) -> None:
    path = history_at.url if isinstance(history_at, PostgresUrl) else str(history_at)
    writers, stages, tests = 4, 25, 20
    context = multiprocessing.get_context("fork")  # the test module is not importable by a spawned child
    processes = [context.Process(target=_write_stages, args=(path, w, stages, tests)) for w in range(writers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * writers
    with HistoryStore(path) as store:
        counts = store.row(
            "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM stages), (SELECT count(*) FROM test_results), "
            "(SELECT count(*) FROM runs WHERE state = 'passed')"
        )
    assert counts == (writers * stages, writers * stages, writers * stages * tests, writers * stages)


def _open_once(path: str) -> None:
    HistoryStore(path).close()


def test_processes_creating_one_new_history_at_once_all_open_it(tmp_path: Path) -> None:
    """Three `ci-tool stage run`s starting together on a new history: SQLite answers BUSY at once, not
    after its busy timeout, to all but one of them switching the file to WAL (it failed about one round
    in forty before the switch was tried again)."""
    context = multiprocessing.get_context("fork")
    failed: dict[int, list[int | None]] = {}  # round -> the exit codes of its processes, where one did not open
    for round_ in range(60):
        path = str(tmp_path / f"h{round_}.sqlite")
        processes = [context.Process(target=_open_once, args=(path,)) for _ in range(3)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(timeout=120)
        if [p.exitcode for p in processes] != [0, 0, 0]:
            failed[round_] = [p.exitcode for p in processes]
    assert failed == {}


def test_export_durations_takes_median_of_latest_non_skipped(store: HistoryStore) -> None:
    for index, seconds in enumerate([9.0, 1.0, 2.0, 3.0, 4.0, 5.0]):
        add_run(store, f"r{index}", float(index * 10), "S-1", [TestRecord("a.py::t", "passed", seconds)])
    add_run(store, "r9", 100.0, "S-1", [TestRecord("a.py::t", "skipped", 0.0), TestRecord("b.py::t", "failed", 7.0)])
    assert queries.export_durations(store) == {"a.py::t": 3.0, "b.py::t": 7.0}


def test_slowest_tests(store: HistoryStore) -> None:
    add_run(store, "r1", 1.0, "S-1", [TestRecord("fast", "passed", 0.1), TestRecord("slow", "passed", 9.0)])
    add_run(store, "r2", 2.0, "S-1", [TestRecord("slow", "passed", 7.0)])
    found = queries.slowest_tests(store, limit=1)
    assert [(s.test_id, s.median_seconds, s.recent) for s in found] == [("slow", 8.0, (9.0, 7.0))]


def test_flaky_tests_by_rerun_and_by_flips_within_a_family(store: HistoryStore) -> None:
    add_run(store, "r1", 1.0, "A10-PyTorch-1", [TestRecord("flip", "passed", 1), TestRecord("gpu", "failed", 1)])
    add_run(store, "r2", 2.0, "A10-PyTorch-2", [TestRecord("flip", "failed", 1), TestRecord("gpu", "failed", 1)])
    add_run(store, "r3", 3.0, "H100-PyTorch-1", [TestRecord("gpu", "passed", 1)])
    add_run(store, "r4", 4.0, "A10-PyTorch-1", [TestRecord("rerun", "failed", 1, rerun_outcome="passed")])
    assert queries.flaky_tests(store) == [
        queries.FlakyTest("flip", "A10-PyTorch", results=2, passed_on_rerun=0, flips=1, last_seen_run="r2",
                          last_seen_at=2.0),
        queries.FlakyTest("rerun", "A10-PyTorch", results=1, passed_on_rerun=1, flips=0, last_seen_run="r4",
                          last_seen_at=4.0),
    ]  # fmt: skip


def test_recent_runs_newest_first(store: HistoryStore) -> None:
    add_run(store, "old", 1.0, "S-1", [])
    add_run(store, "new", 2.0, "S-1", [])
    assert [run.run_id for run in queries.recent_runs(store)] == ["new", "old"]


@pytest.fixture
def locker(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A second connection to the history holding its write lock (`BEGIN IMMEDIATE`) until it rolls back."""
    HistoryStore(tmp_path / "h.sqlite").close()
    other = sqlite3.connect(tmp_path / "h.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    yield other
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.close()


def test_a_write_tries_again_while_another_process_holds_the_lock(tmp_path: Path, locker: sqlite3.Connection) -> None:
    heard: list[str] = []

    def release(message: str) -> None:  # the first attempt timed out: the other process finishes now
        heard.append(message)
        locker.execute("ROLLBACK")

    with HistoryStore(tmp_path / "h.sqlite", busy_timeout_ms=10, on_retry=release) as store:
        store.start_run(RunRecord("r1", "x", "running", 1.0))
        assert [run.run_id for run in queries.recent_runs(store)] == ["r1"]
    assert heard == ["the history is locked; trying again in 0.01 s (attempt 2 of 3)"]


def test_a_lock_held_past_every_attempt_is_a_located_error(tmp_path: Path, locker: sqlite3.Connection) -> None:
    heard: list[str] = []
    with HistoryStore(tmp_path / "h.sqlite", busy_timeout_ms=10, on_retry=heard.append) as store:
        with pytest.raises(HistoryError) as error:
            store.record_stage(StageRecord("r1", "S-1", "passed"), recorded_at=1.0)
        assert not store.db.in_transaction
    assert str(error.value) == (
        f"{tmp_path}/h.sqlite: the history is locked: expected to write it within 3 tries of 0.01 s, found another "
        "process holding its lock Hint: let the other ci-tool (or the program that has the file open) finish, "
        "or pass --history PATH"
    )
    assert len(heard) == 2


def test_a_read_only_store_never_writes(tmp_path: Path) -> None:
    HistoryStore(tmp_path / "h.sqlite").close()
    with HistoryStore(tmp_path / "h.sqlite", read_only=True) as store, pytest.raises(HistoryError) as error:
        store.start_run(RunRecord("r1", "x", "running", 1.0))
    assert str(error.value) == (
        f"{tmp_path}/h.sqlite: cannot write the history: expected a writable file, found 'attempt to write a "
        "readonly database' Hint: make the file and its folder writable, or pass --history PATH"
    )


def test_a_foreign_sqlite_file_is_never_written(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "theirs.db") as db:
        db.execute("CREATE TABLE users (name TEXT)")
    db.close()
    before = (tmp_path / "theirs.db").read_bytes()
    with pytest.raises(HistoryError, match="found a SQLite database with other tables"):
        HistoryStore(tmp_path / "theirs.db")
    assert (tmp_path / "theirs.db").read_bytes() == before


def test_a_history_below_a_file_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(HistoryError) as error:
        HistoryStore(tmp_path / "file" / "h.sqlite")
    assert str(error.value) == (
        f"{tmp_path}/file/h.sqlite: cannot open the history: File exists "
        "Hint: pass --history PATH in a folder you can write"
    )


def _version_1_file(path: Path) -> None:
    """A history as ci-tool wrote it before runs held their code: the version 1 tables and one run."""
    with sqlite3.connect(path) as db:
        for statement in schema.BASE:  # the version 1 tables, which every file starts from
            db.execute(statement)
        db.execute("INSERT INTO schema_version (version) VALUES (1)")
        db.execute("INSERT INTO runs (run_id, command, state, started_at) VALUES ('old', '/bot run', 'passed', 1.0)")
    db.close()


def test_a_version_1_file_gains_the_code_of_its_runs_and_keeps_them(tmp_path: Path) -> None:
    _version_1_file(tmp_path / "h.sqlite")
    with HistoryStore(tmp_path / "h.sqlite") as store:
        store.start_run(RunRecord("new", "/bot run", "running", 2.0, code_commit="abc", code_diff="", scope="{}"))
        found = [(r.run_id, r.code_commit, r.scope) for r in queries.recent_runs(store)]
        version = store.db.execute("SELECT version FROM schema_version").fetchall()
    assert (found, version) == ([("new", "abc", "{}"), ("old", "", "")], [(SCHEMA_VERSION,)])


# Opens the history in argv[1] read-only and prints its runs: run in a child where the file modes bind root too.
READ_RUNS = """
import json, sys
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
with HistoryStore(sys.argv[1], read_only=True) as store:
    print(json.dumps([(r.run_id, r.code_commit, store.version) for r in queries.recent_runs(store)]))
"""


def test_a_version_1_file_that_cannot_be_written_is_read_as_it_is(tmp_path: Path) -> None:
    """In a child where the modes bind root too (tests/ci_tool/file_modes.py), so every host runs it."""
    folder = tmp_path / "ro"
    folder.mkdir()
    _version_1_file(folder / "h.sqlite")
    (folder / "h.sqlite").chmod(0o444)
    folder.chmod(0o555)
    try:
        command = where_modes_bind([sys.executable, "-c", READ_RUNS, str(folder / "h.sqlite")])
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
        left = sorted(path.name for path in folder.iterdir())
    finally:
        folder.chmod(0o755)
    assert (done.returncode, done.stderr, json.loads(done.stdout or "null")) == (0, "", [["old", "", 1]])
    assert left == ["h.sqlite"]


def add_processes(store: HistoryStore, run_id: str, started_at: float, processes: list[dict[str, object]]) -> None:
    store.start_run(RunRecord(run_id, "/bot run", "running", started_at))
    store.record_stage(StageRecord(run_id, "S-1", "passed", details={"processes": processes}), [], recorded_at=1.0)
    store.finish_run(run_id, state="passed", finished_at=started_at + 2)


def test_export_process_costs_shares_a_process_cost_among_its_entries(store: HistoryStore) -> None:
    for index, seconds in enumerate([10.0, 14.0, 12.0]):
        add_processes(
            store,
            f"r{index}",
            float(index),
            [
                {"entries": ["a.py", "b.py -k fast"], "seconds": seconds, "tests_seconds": 6.0},
                {"entries": ["c.py"], "seconds": 1.0, "tests_seconds": 2.0},  # a clock step: no negative cost
            ],
        )
    assert queries.export_process_costs(store) == {"a.py": 3.0, "b.py -k fast": 3.0, "c.py": 0.0}


@pytest.mark.parametrize(
    "seconds",
    [10**400, -1.0, float("nan"), float("inf"), "12", True],
    ids=["past-a-float", "negative", "nan", "inf", "text", "bool"],
)
def test_export_process_costs_leaves_out_a_process_whose_seconds_no_clock_measured(
    store: HistoryStore, seconds: object
) -> None:
    good = {"entries": ["a.py"], "seconds": 10.0, "tests_seconds": 6.0}
    add_processes(store, "r0", 0.0, [good, {"entries": ["b.py"], "seconds": seconds, "tests_seconds": 1.0}])
    assert queries.export_process_costs(store) == {"a.py": 4.0}


def test_the_dispatch_ledger_moves_a_dispatch_on_in_place(store: HistoryStore) -> None:
    key = DispatchKey("https://jenkins.example", "ci/pr", 7, '{"stages": []}')
    record = DispatchRecord(key, "org/repo", 12, "abc", DispatchState.TRIGGERING, updated_at=1.0)
    record_dispatch(store, record)
    record_dispatch(store, dataclasses.replace(record, state=DispatchState.QUEUED, queue_id=2**40, updated_at=2.0))
    assert find_dispatch(store, key) == dataclasses.replace(
        record, state=DispatchState.QUEUED, queue_id=2**40, updated_at=2.0
    )
    assert store.rows("SELECT count(*) FROM dispatches") == [(1,)]


def test_reuse_finds_the_newest_finished_run_of_the_same_code_and_scope(store: HistoryStore) -> None:
    for run_id, started, commit, state in [
        ("old", 1.0, "c1", RunState.PASSED), ("new", 2.0, "c1", RunState.FAILED),
        ("other", 3.0, "c2", RunState.PASSED), ("open", 4.0, "c1", RunState.RUNNING),
    ]:  # fmt: skip
        store.start_run(RunRecord(run_id, "run", RunState.RUNNING, started, code_commit=commit, scope="{}"))
        if state is not RunState.RUNNING:
            store.finish_run(run_id, state=state, finished_at=started + 0.5)
    found = reuse_of(store, ReuseKey("c1", "", "{}"), inputs_of=lambda _stage: "", exclude="open")
    assert found is not None and found.run is not None and found.run.run_id == "new"
    assert reuse_of(store, ReuseKey("c1", "", "another scope"), inputs_of=lambda _stage: "") is None
