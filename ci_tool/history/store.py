"""The SQLite history store: one file, many writers.

    runs          one row per `ci-tool run` / `ci-tool stage run`, with the code it tested (commit and
                  the hash of the uncommitted change) and its request scope: what reuse matches on
    stages        one row per stage of a run (also stages that waited or were skipped, with why)
    test_results  one row per test of a stage: first outcome, rerun outcome, duration, waive, signature
    dispatches    the bot's ledger: one row per /bot comment and request it triggered a build for (ledger.py)
    perf_results  one row per perf-sanity case, GPU type and metric of a stage (perf_results.py)
    touches       which test ran which file, as the latest touch-recording run of each test saw it
                  (history/touches.py; change-based selection's tier 2)

Concurrent stage processes write at once without losing rows: WAL journal, a busy timeout, and every
write is one `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so two writers never
deadlock upgrading a read lock); a write still locked out after the busy timeout is tried again
(WRITE_ATTEMPTS in all, with a backoff). `schema_version` holds the version; a newer file is refused,
and so is a SQLite file of someone else's (tables, but no `schema_version`). An older file is brought up
to date by MIGRATIONS, one small step per version, under the write lock; a new file gets the version 1
tables and then every step.

Opening to read (`read_only=True`: `ci-tool history`, `report`, `durations export`) takes no write lock:
a `mode=ro` connection (`immutable=1` where the folder is read-only, so SQLite cannot make its `-shm`
file), and tables are created only when the file has none yet (or an older version) and can be written;
an older file that cannot be written is read as it is (`version`: what it lacks reads as empty).
Every SQLite error becomes a located HistoryError: damaged (a corrupted page), not a SQLite file, locked,
read-only.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ci_tool.errors import HistoryError, Where
from ci_tool.history import perf_results
from ci_tool.history.sqlite_errors import cannot_share, history_error, is_busy
from ci_tool.layout import HISTORY_PATH
from ci_tool.outcomes import RunState, StageState, TestOutcome

HISTORY_ENV = "CI_TOOL_HISTORY"
BUSY_TIMEOUT_MS = 60_000  # one attempt at the write lock
WRITE_ATTEMPTS = 3  # attempts at a write whose lock another process holds
TABLES = ("runs", "stages", "test_results")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    command TEXT NOT NULL,
    state TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    host TEXT NOT NULL DEFAULT '',
    details_json TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS stages (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    started_at REAL,
    duration_seconds REAL NOT NULL DEFAULT 0,
    passed INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,
    results_dir TEXT NOT NULL DEFAULT '',
    details_json TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, name)
);
CREATE TABLE IF NOT EXISTS test_results (
    run_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    test_id TEXT NOT NULL,
    outcome TEXT NOT NULL,
    rerun_outcome TEXT,
    duration_seconds REAL NOT NULL,
    waive_reason TEXT,
    kind TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    signature TEXT NOT NULL DEFAULT '',
    output_head TEXT NOT NULL DEFAULT '',
    recorded_at REAL NOT NULL,
    PRIMARY KEY (run_id, stage, test_id)
);
CREATE INDEX IF NOT EXISTS test_results_by_test ON test_results (test_id, recorded_at);
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (started_at);
"""

# Version -> the statements that take a file of the version before it there. Each step is small and
# stands alone, so steps written on other branches merge as further rows.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        2,  # the bot's ledger of the builds it triggered (ledger.py)
        (
            """CREATE TABLE IF NOT EXISTS dispatches (
                jenkins_url TEXT NOT NULL,
                job TEXT NOT NULL,
                comment_id INTEGER NOT NULL,
                request_json TEXT NOT NULL,
                repository TEXT NOT NULL,
                pull_request INTEGER NOT NULL,
                head_sha TEXT NOT NULL,
                state TEXT NOT NULL,
                queue_id INTEGER,
                build_number INTEGER,
                updated_at REAL NOT NULL,
                PRIMARY KEY (jenkins_url, job, comment_id, request_json)
            )""",
        ),
    ),
    (
        3,  # the code a run tested and its request scope, which reuse matches on
        (
            "ALTER TABLE runs ADD COLUMN code_commit TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE runs ADD COLUMN code_diff TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE runs ADD COLUMN scope TEXT NOT NULL DEFAULT ''",
            "CREATE INDEX IF NOT EXISTS runs_by_code ON runs (code_commit, code_diff, scope, started_at)",
        ),
    ),
    (perf_results.SCHEMA_STEP, perf_results.SCHEMA_STATEMENTS),  # the perf-sanity cases' results
    (
        5,  # touch records: the tests that ran each file (history/touches.py)
        (
            "CREATE TABLE IF NOT EXISTS touches (source TEXT NOT NULL, test_id TEXT NOT NULL, run_id TEXT NOT NULL, "
            "recorded_at REAL NOT NULL, PRIMARY KEY (source, test_id))",
            "CREATE INDEX IF NOT EXISTS touches_by_test ON touches (test_id)",
        ),
    ),
    # history-robust's step 6 (run owners) goes here; keep the perf noise step after it
    (perf_results.NOISE_STEP, perf_results.NOISE_STATEMENTS),  # perf results' noise and rounds
)
CODE_VERSION = 3  # the first version whose runs hold their code and scope
SCHEMA_VERSION = MIGRATIONS[-1][0]


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    command: str
    state: RunState
    started_at: float
    finished_at: float | None = None
    host: str = ""
    details: Mapping[str, object] = field(default_factory=dict)
    code_commit: str = ""  # the commit the run tested ("" outside a git checkout)
    code_diff: str = ""  # the hash of the uncommitted change ("" for a clean checkout)
    scope: str = ""  # what the run was asked to select (SelectionRequest.scope; "stage NAME" for one stage)


@dataclass(frozen=True)
class StageRecord:
    run_id: str
    name: str
    state: StageState
    reason: str = ""  # why it did not run, or why it failed without tests
    started_at: float | None = None
    duration_seconds: float = 0.0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    results_dir: str = ""
    details: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class TestRecord:
    """One test of one stage. `outcome` is the first attempt's; `rerun_outcome` the rerun's, if any."""

    __test__ = False  # not a pytest test class despite the name

    test_id: str
    outcome: TestOutcome
    duration_seconds: float
    rerun_outcome: TestOutcome | None = None
    waive_reason: str | None = None
    kind: str = ""
    message: str = ""
    signature: str = ""
    output_head: str = ""

    @property
    def final_outcome(self) -> TestOutcome:
        return self.rerun_outcome or self.outcome


def history_path(option: str | Path | None, environ: Mapping[str, str] = os.environ) -> Path:
    """`--history PATH`, else $CI_TOOL_HISTORY, else `.ci-tool/history.sqlite` under the working directory."""
    if option:
        return Path(option)
    if environ.get(HISTORY_ENV):
        return Path(environ[HISTORY_ENV])
    return HISTORY_PATH


Row = tuple[Any, ...]
StageRecords = tuple[StageRecord, Sequence[TestRecord], float]  # a stage, its tests, when it was recorded


class HistoryStore:
    """An open history file. Use as a context manager, or call `close()`.

    `read_only`: the file must exist and is never written (except to create its tables when it has
    none and can be written). `on_retry` hears why a write waits before it is tried again.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = True,
        read_only: bool = False,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.on_retry = on_retry or (lambda message: None)
        if (read_only or not create) and not self.path.exists():
            raise HistoryError(
                "expected a history file, found none",
                where=Where(str(self.path)),
                hint="run `ci-tool run` or `ci-tool stage run` first, or pass --history PATH",
            )
        self.version = SCHEMA_VERSION  # of the open file (older only when it is read-only)
        self.db = self._open_read_only() if read_only else self._open_for_writing()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def _connect(self, target: str, *, uri: bool = False) -> sqlite3.Connection:
        db = sqlite3.connect(target, timeout=self.busy_timeout_ms / 1000, isolation_level=None, uri=uri)
        db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        return db

    def _open_for_writing(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise HistoryError(
                f"cannot open the history: {error.strerror}",
                where=Where(str(self.path)),
                hint="pass --history PATH in a folder you can write",
            ) from None
        try:
            self.db = self._connect(str(self.path))
        except sqlite3.Error as error:
            raise self.error(error, "open") from None
        try:
            version = self._schema_version(self.db)  # first: a foreign file is refused before any write
            self._switch_to_wal()
            self.db.execute("PRAGMA synchronous = NORMAL")
            if version is None or version < SCHEMA_VERSION:
                self._write(self._migrate)
        except sqlite3.Error as error:
            self.db.close()
            raise self.error(error, "open") from None
        except HistoryError:
            self.db.close()
            raise
        return self.db

    def _switch_to_wal(self) -> None:
        """`journal_mode = WAL`, waiting out other processes that switch the same new file at once: SQLite
        answers BUSY at once there, without its busy handler (each holds a shared lock and wants the
        exclusive one), so the switch is tried again, with a short random pause, within the busy timeout."""
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        while True:
            try:
                self.db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.Error as error:
                if not is_busy(error) or time.monotonic() >= deadline:
                    raise
            time.sleep(random.uniform(0.005, 0.05))  # apart, so one of them wins the next try

    def _open_read_only(self) -> sqlite3.Connection:
        db, version = self._connect_read_only()
        if version is None or version < SCHEMA_VERSION:  # a new file or an older ci-tool's: tables first
            db.close()
            try:
                HistoryStore(self.path, busy_timeout_ms=self.busy_timeout_ms, on_retry=self.on_retry).close()
            except HistoryError:
                if version is None:  # no tables to read
                    raise
            db, version = self._connect_read_only()
        self.version = version or SCHEMA_VERSION
        return db

    def _connect_read_only(self) -> tuple[sqlite3.Connection, int | None]:
        """A `mode=ro` connection and the schema version; `immutable=1` where SQLite cannot create the
        WAL's `-shm` file beside the history (a read-only folder)."""
        uri = self.path.absolute().as_uri() + "?mode=ro"
        try:
            return self._probe(uri)
        except sqlite3.Error as error:
            if not cannot_share(error):
                raise self.error(error, "open") from None
        try:
            return self._probe(uri + "&immutable=1")
        except sqlite3.Error as error:
            raise self.error(error, "open") from None

    def _probe(self, uri: str) -> tuple[sqlite3.Connection, int | None]:
        db = self._connect(uri, uri=True)
        try:
            return db, self._schema_version(db)
        except BaseException:
            db.close()
            raise

    def _schema_version(self, db: sqlite3.Connection) -> int | None:
        """The file's schema version; None for a file without tables (a new history)."""
        found = db.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").fetchall()
        tables = [row[0] for row in found]
        if "schema_version" not in tables:
            if tables:
                raise HistoryError(
                    f"expected a ci-tool history (tables {', '.join(TABLES)}), found a SQLite database with "
                    f"other tables ({', '.join(repr(t) for t in tables)})",
                    where=Where(str(self.path)),
                    hint="pass the history file ci-tool writes (--history PATH); this one is left as it is",
                )
            return None
        [(version,)] = db.execute("SELECT max(version) FROM schema_version").fetchall()  # all: no lock kept
        if version is not None and version > SCHEMA_VERSION:
            raise HistoryError(
                f"expected history schema version {SCHEMA_VERSION} or older, found {version}",
                where=Where(str(self.path)),
                hint="a newer ci-tool wrote this file; upgrade ci-tool or pass another --history",
            )
        return version if isinstance(version, int) else None

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = self._schema_version(db)  # again, under the write lock: another process may have done it
        if version == SCHEMA_VERSION:
            return
        if version is None:
            for statement in _SCHEMA.split(";"):  # executescript() would commit the open transaction
                if statement.strip():
                    db.execute(statement)
        for step, statements in MIGRATIONS:
            if step > (version or 1):
                for statement in statements:
                    db.execute(statement)
        db.execute("DELETE FROM schema_version")
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    def error(self, error: sqlite3.Error, doing: str, *, attempts: int = 1) -> HistoryError:
        """The located HistoryError for a SQLite error met while `doing` (open, read, write) the history."""
        return history_error(self.path, error, doing, attempts=attempts, busy_timeout_ms=self.busy_timeout_ms)

    # -- reads ------------------------------------------------------------------------------------

    def rows(self, sql: str, parameters: Sequence[object] = ()) -> list[Row]:
        """Every row of a query; a SQLite error (a damaged page, say) is a located HistoryError."""
        try:
            return self.db.execute(sql, parameters).fetchall()
        except sqlite3.Error as error:
            raise self.error(error, "read") from None

    def row(self, sql: str, parameters: Sequence[object] = ()) -> Row | None:
        found = self.rows(sql, parameters)
        return found[0] if found else None

    # -- writes -----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the write lock from its start."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:  # SQLite rolls some failures back itself
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
            raise

    def write(self, work: Callable[[sqlite3.Connection], None]) -> None:
        """Run `work` in one write transaction with the store's retries (for the tables other modules own:
        perf_results.py, touches.py)."""
        self._write(work)

    def _write(self, work: Callable[[sqlite3.Connection], None]) -> None:
        """Run `work` in one write transaction, trying again (with a backoff) while the lock is held."""
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with self.transaction() as db:
                    work(db)
                return
            except sqlite3.Error as error:
                if not is_busy(error) or attempt == WRITE_ATTEMPTS:
                    raise self.error(error, "write", attempts=attempt) from None
            delay = min(self.busy_timeout_ms / 1000, 1.0) * 2 ** (attempt - 1)
            self.on_retry(
                f"the history is locked; trying again in {delay:g} s (attempt {attempt + 1} of {WRITE_ATTEMPTS})"
            )
            time.sleep(delay)

    def start_run(self, run: RunRecord) -> None:
        self._write(lambda db: _insert_run(db, run, upsert=False))

    def finish_run(self, run_id: str, *, state: RunState, finished_at: float) -> None:
        def finish(db: sqlite3.Connection) -> None:
            found = db.execute(
                "UPDATE runs SET state = ?, finished_at = ? WHERE run_id = ?", (state, finished_at, run_id)
            )
            if found.rowcount == 0:
                raise HistoryError(f"expected a recorded run, found no run {run_id!r}", where=Where(str(self.path)))

        self._write(finish)

    def record_stage(self, stage: StageRecord, tests: Sequence[TestRecord] = (), *, recorded_at: float) -> None:
        """Store a stage and its tests in one transaction (replacing an earlier record of the same stage)."""
        self._write(lambda db: _insert_stage(db, stage, tests, recorded_at))

    def record_run(self, run: RunRecord, stages: Sequence[StageRecords]) -> None:
        """Store a whole run in one transaction, replacing what is recorded of it (an import)."""

        def record(db: sqlite3.Connection) -> None:
            _insert_run(db, run, upsert=True)
            for stage, tests, recorded_at in stages:
                _insert_stage(db, stage, tests, recorded_at)

        self._write(record)


def _insert_run(db: sqlite3.Connection, run: RunRecord, *, upsert: bool) -> None:
    replace = (
        " ON CONFLICT (run_id) DO UPDATE SET command = excluded.command, state = excluded.state, started_at = "
        "excluded.started_at, finished_at = excluded.finished_at, host = excluded.host, details_json = "
        "excluded.details_json"
    )
    replace += ", code_commit = excluded.code_commit, code_diff = excluded.code_diff, scope = excluded.scope"
    db.execute(
        "INSERT INTO runs (run_id, command, state, started_at, finished_at, host, details_json, code_commit, "
        "code_diff, scope) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" + (replace if upsert else ""),
        (
            run.run_id, run.command, run.state, run.started_at, run.finished_at, run.host, _json(run.details),
            run.code_commit, run.code_diff, run.scope,
        ),
    )  # fmt: skip


def _insert_stage(db: sqlite3.Connection, stage: StageRecord, tests: Sequence[TestRecord], recorded_at: float) -> None:
    db.execute("DELETE FROM test_results WHERE run_id = ? AND stage = ?", (stage.run_id, stage.name))
    db.execute(
        "INSERT OR REPLACE INTO stages (run_id, name, state, reason, started_at, duration_seconds, passed, "
        "failed, skipped, results_dir, details_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            stage.run_id, stage.name, stage.state, stage.reason, stage.started_at, stage.duration_seconds,
            stage.passed, stage.failed, stage.skipped, stage.results_dir, _json(stage.details),
        ),
    )  # fmt: skip
    db.executemany(
        "INSERT OR REPLACE INTO test_results (run_id, stage, test_id, outcome, rerun_outcome, "
        "duration_seconds, waive_reason, kind, message, signature, output_head, recorded_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                stage.run_id, stage.name, t.test_id, t.outcome, t.rerun_outcome, t.duration_seconds,
                t.waive_reason, t.kind, t.message, t.signature, t.output_head, recorded_at,
            )
            for t in tests
        ],
    )  # fmt: skip


def _json(value: Mapping[str, object]) -> str:
    return json.dumps(value, sort_keys=True)
