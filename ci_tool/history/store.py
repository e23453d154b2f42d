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
(WRITE_ATTEMPTS in all, with a backoff). SQLite waits for a lock in BUSY_SLICE_MS slices, so a SIGTERM
or Ctrl-C is acted on between them, not after the whole busy timeout; the transaction it interrupts rolls
back. `schema_version` holds the version; a newer file is refused, and so is an unreadable version ('abc',
two rows) and a SQLite file of someone else's (tables, but no `schema_version`). An older file is brought
up to date by schema.MIGRATIONS, one small idempotent step per version, in one write transaction; a new
file gets the version 1 tables and then every step. Every open for writing then sweeps the runs whose
owner died (owners.py). Rows read back become typed values in rows.py.

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
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ci_tool.errors import HistoryError, Where
from ci_tool.history import owners
from ci_tool.history.records import RunRecord, StageRecord, TestRecord
from ci_tool.history.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION, apply
from ci_tool.history.sqlite_errors import cannot_share, history_error, is_busy
from ci_tool.layout import HISTORY_PATH
from ci_tool.outcomes import RunState

HISTORY_ENV = "CI_TOOL_HISTORY"
BUSY_TIMEOUT_MS = 60_000  # one attempt at the write lock
# SQLite waits for a lock in C, where Python's signal handlers cannot run: it waits in slices this long, and
# between them a SIGTERM or Ctrl-C is acted on (a 60 s wait would hold it for 60 s).
BUSY_SLICE_MS = 100
HURRIED_BUSY_TIMEOUT_MS = 2_000  # closing an interrupted run: one short try, then the stale-run sweep closes it
WRITE_ATTEMPTS = 3  # attempts at a write whose lock another process holds
TABLES = ("runs", "stages", "test_results")
T = TypeVar("T")


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
    none and can be written). `on_retry` hears why a write waits before it is tried again; `warn` hears
    each bad row a reader leaves out (rows.py), by default on stderr as `warning: ...`.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = True,
        read_only: bool = False,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        on_retry: Callable[[str], None] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.on_retry = on_retry or (lambda message: None)
        self.warn = warn or _warn_on_stderr
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
        slice_ms = min(BUSY_SLICE_MS, self.busy_timeout_ms)
        db = sqlite3.connect(target, timeout=slice_ms / 1000, isolation_level=None, uri=uri)
        db.execute(f"PRAGMA busy_timeout = {int(slice_ms)}")
        return db

    def _patiently(self, statement: Callable[[], T], *, budget_ms: int | None = None) -> T:
        """`statement()`, tried again while another connection holds the lock, for `budget_ms` (the busy
        timeout) in all: SQLite waits one BUSY_SLICE_MS slice per try, and between tries Python runs the
        handler of a signal that came (SIGTERM, Ctrl-C), which raises out of here at once."""
        deadline = time.monotonic() + (self.busy_timeout_ms if budget_ms is None else budget_ms) / 1000
        while True:
            try:
                return statement()
            except sqlite3.Error as error:
                if not is_busy(error) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.005)  # SQLite answers some BUSY at once, without waiting its slice: no hot loop

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
            version = self._patiently(lambda: self._schema_version(self.db))  # a foreign file: refused unwritten
            self._switch_to_wal()
            self.db.execute("PRAGMA synchronous = NORMAL")
            if version is None or version < SCHEMA_VERSION:
                self._write(self._migrate)
            owners.sweep_stale_runs(self)
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
            return db, self._patiently(lambda: self._schema_version(db))
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
        versions = [row[0] for row in db.execute("SELECT version FROM schema_version").fetchall()]  # all: no lock
        if not versions:  # the row deleted: the migrations, idempotent, find what is there and add the rest
            return None
        found = versions[0] if len(versions) == 1 else versions
        if isinstance(found, int) and not isinstance(found, bool) and found > SCHEMA_VERSION:
            raise HistoryError(
                f"expected history schema version {SCHEMA_VERSION} or older, found {found}",
                where=Where(str(self.path)),
                hint="a newer ci-tool wrote this file; upgrade ci-tool or pass another --history",
            )
        if not isinstance(found, int) or isinstance(found, bool) or found < 1:
            raise HistoryError(
                f"expected history schema version 1 to {SCHEMA_VERSION}, found {found!r}",
                where=Where(str(self.path)),
                hint="table schema_version was changed outside ci-tool: it holds one row, the version of the "
                "file's tables; keep the file aside and pass another --history if you do not know it",
            )
        return found

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = self._schema_version(db)  # again, under the write lock: another process may have done it
        if version == SCHEMA_VERSION:
            return
        if version is None:
            for table in SCHEMA.split(";"):  # executescript() would commit the open transaction
                if table.strip():
                    db.execute(table)
        for step, statements in MIGRATIONS:
            if step > (version or 1):
                for statement in statements:
                    apply(db, statement)
        db.execute("DELETE FROM schema_version")
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    def error(self, error: sqlite3.Error, doing: str, *, attempts: int = 1) -> HistoryError:
        """The located HistoryError for a SQLite error met while `doing` (open, read, write) the history."""
        return history_error(self.path, error, doing, attempts=attempts, busy_timeout_ms=self.busy_timeout_ms)

    # -- reads ------------------------------------------------------------------------------------

    def rows(self, sql: str, parameters: Sequence[object] = ()) -> list[Row]:
        """Every row of a query, untyped: rows.py makes them values. A SQLite error (a damaged page, say) is
        a located HistoryError."""
        try:
            return self._patiently(lambda: self.db.execute(sql, parameters).fetchall())
        except sqlite3.Error as error:
            raise self.error(error, "read") from None

    def row(self, sql: str, parameters: Sequence[object] = ()) -> Row | None:
        found = self.rows(sql, parameters)
        return found[0] if found else None

    # -- writes -----------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, budget_ms: int | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the write lock from its start (waited for within `budget_ms`, the
        busy timeout by default). Whatever interrupts it (a signal, an error, a full disk) rolls it back."""
        self._patiently(lambda: self.db.execute("BEGIN IMMEDIATE"), budget_ms=budget_ms)
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

    def _write(self, work: Callable[[sqlite3.Connection], None], *, hurry: bool = False) -> None:
        """Run `work` in one write transaction, trying again (with a backoff) while the lock is held;
        `hurry`: one try of HURRIED_BUSY_TIMEOUT_MS (a run closing after an interrupt)."""
        attempts = 1 if hurry else WRITE_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                with self.transaction(budget_ms=HURRIED_BUSY_TIMEOUT_MS if hurry else None) as db:
                    work(db)
                return
            except sqlite3.Error as error:
                if not is_busy(error) or attempt == attempts:
                    busy_timeout_ms = HURRIED_BUSY_TIMEOUT_MS if hurry else self.busy_timeout_ms
                    raise history_error(
                        self.path, error, "write", attempts=attempt, busy_timeout_ms=busy_timeout_ms
                    ) from None
            delay = min(self.busy_timeout_ms / 1000, 1.0) * 2 ** (attempt - 1)
            self.on_retry(
                f"the history is locked; trying again in {delay:g} s (attempt {attempt + 1} of {WRITE_ATTEMPTS})"
            )
            time.sleep(delay)

    def start_run(self, run: RunRecord) -> None:
        """Record a run as it starts, owned by this process (the stale-run sweep closes it if we die)."""
        owner = owners.this_process()

        def start(db: sqlite3.Connection) -> None:
            _insert_run(db, run, upsert=False)
            db.execute(
                "UPDATE runs SET owner_pid = ?, owner_start = ? WHERE run_id = ?", (owner.pid, owner.start, run.run_id)
            )

        self._write(start)

    def finish_run(self, run_id: str, *, state: RunState, finished_at: float, hurry: bool = False) -> None:
        """Close a run; `hurry` (after an interrupt): one short try, the sweep closes it if that fails."""

        def finish(db: sqlite3.Connection) -> None:
            found = db.execute(
                "UPDATE runs SET state = ?, finished_at = ? WHERE run_id = ?", (state, finished_at, run_id)
            )
            if found.rowcount == 0:
                raise HistoryError(f"expected a recorded run, found no run {run_id!r}", where=Where(str(self.path)))

        self._write(finish, hurry=hurry)

    def record_stage(
        self, stage: StageRecord, tests: Sequence[TestRecord] = (), *, recorded_at: float, hurry: bool = False
    ) -> None:
        """Store a stage and its tests in one transaction (replacing an earlier record of the same stage)."""
        self._write(lambda db: _insert_stage(db, stage, tests, recorded_at), hurry=hurry)

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


def _warn_on_stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _json(value: Mapping[str, object]) -> str:
    return json.dumps(value, sort_keys=True)
