"""The SQLite history: one file, many writers on one machine (the embedded default).

Concurrent stage processes write at once without losing rows: WAL journal, a busy timeout, and every
write is one `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so two writers never
deadlock upgrading a read lock); a write still locked out after the busy timeout is tried again
(WRITE_ATTEMPTS in all, with a backoff). `schema_version` holds the version; a newer file is refused,
and so is a SQLite file of someone else's (tables, but no `schema_version`). An older file is brought up
to date by the migrations (schema.py) under the write lock.

Opening to read (`read_only=True`) takes no write lock: a `mode=ro` connection (`immutable=1` where the
folder is read-only, so SQLite cannot make its `-shm` file), and tables are created only when the file has
none yet (or an older version) and can be written; an older file that cannot be written is read as it is
(`version`: what it lacks reads as empty). Every SQLite error becomes a located HistoryError: damaged (a
corrupted page), not a SQLite file, locked, read-only, full disk.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ci_tool.errors import HistoryError, Where
from ci_tool.history import schema
from ci_tool.history.backend import Access, Row, Work
from ci_tool.history.schema import SCHEMA_VERSION, AddColumn, Statement
from ci_tool.history.sqlite_errors import cannot_share, history_error, is_busy

BUSY_TIMEOUT_MS = 60_000  # one attempt at the write lock
# SQLite waits for a lock in C, where Python's signal handlers cannot run: it waits in slices this long, and
# between them a SIGTERM or Ctrl-C is acted on (a 60 s wait would hold it for 60 s).
BUSY_SLICE_MS = 100
HURRIED_BUSY_TIMEOUT_MS = 2_000  # closing an interrupted run: one short try, then the stale-run sweep closes it
WRITE_ATTEMPTS = 3  # attempts at a write whose lock another process holds
T = TypeVar("T")


_UNDECODABLE = "Could not decode to UTF-8"  # how sqlite3 says a text cell is not UTF-8 (written outside ci-tool)


def _text_or_bytes(raw: bytes) -> str | bytes:
    """A text cell as a str, or as its bytes where it is not UTF-8: a value no row check takes for a text."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class SqliteWriter:
    """A write transaction on the file: SQLite's write lock already holds off every other writer."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> sqlite3.Cursor:
        return self.db.execute(sql, parameters)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> object:
        return self.db.executemany(sql, rows)

    def lock(self, key: str) -> None:
        pass


class SqliteHistory:
    """An open SQLite history file (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        *,
        create: bool,
        read_only: bool,
        busy_timeout_ms: int,
        on_retry: Callable[[str], None],
    ) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.on_retry = on_retry
        if (read_only or not create) and not self.path.exists():
            raise HistoryError(
                "expected a history file, found none",
                where=Where(str(self.path)),
                hint="run `ci-tool run` or `ci-tool stage run` first, or pass --history PATH",
            )
        self.version = SCHEMA_VERSION
        self.db = self._open_read_only() if read_only else self._open_for_writing()

    def close(self) -> None:
        self.db.close()

    def group_concat(self, expression: str) -> str:
        return f"group_concat({expression})"

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
            raise self.error(error, Access.OPEN) from None
        try:
            version = self._patiently(lambda: self._schema_version(self.db))  # a foreign file: refused unwritten
            self._switch_to_wal()
            self.db.execute("PRAGMA synchronous = NORMAL")
            if version is None or version < SCHEMA_VERSION:
                self.write(lambda writer: self._migrate(self.db))
        except sqlite3.Error as error:
            self.db.close()
            raise self.error(error, Access.OPEN) from None
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
                SqliteHistory(
                    self.path,
                    create=True,
                    read_only=False,
                    busy_timeout_ms=self.busy_timeout_ms,
                    on_retry=self.on_retry,
                ).close()
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
                raise self.error(error, Access.OPEN) from None
        try:
            return self._probe(uri + "&immutable=1")
        except sqlite3.Error as error:
            raise self.error(error, Access.OPEN) from None

    def _probe(self, uri: str) -> tuple[sqlite3.Connection, int | None]:
        db = self._connect(uri, uri=True)
        try:
            return db, self._patiently(lambda: self._schema_version(db))
        except BaseException:
            db.close()
            raise

    def _schema_version(self, db: sqlite3.Connection) -> int | None:
        found = db.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").fetchall()
        tables = [row[0] for row in found]
        if "schema_version" not in tables:
            schema.refuse_foreign(str(self.path), tables, kind="a SQLite database", noun="file", option="PATH")
            return None
        versions = [row[0] for row in db.execute("SELECT version FROM schema_version").fetchall()]  # all: no lock
        return schema.checked_version(str(self.path), versions, noun="file")

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = self._schema_version(db)  # again, under the write lock: another process may have done it
        if version == SCHEMA_VERSION:
            return
        for statement in schema.steps_after(version):
            _apply(db, statement)
        db.execute("DELETE FROM schema_version")
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    def error(self, error: sqlite3.Error, doing: Access, *, attempts: int = 1) -> HistoryError:
        """The located HistoryError for a SQLite error met while `doing` (open, read, write) the history."""
        return history_error(self.path, error, doing, attempts=attempts, busy_timeout_ms=self.busy_timeout_ms)

    def rows(self, sql: str, parameters: Sequence[object] = ()) -> list[Row]:
        try:
            return self._patiently(lambda: self._fetch(sql, parameters))
        except sqlite3.Error as error:
            raise self.error(error, Access.READ) from None

    def _fetch(self, sql: str, parameters: Sequence[object]) -> list[Row]:
        """The rows of a query; where a text cell is not UTF-8, read again with such cells as their bytes, so
        that the reader names the row (rows.py) instead of sqlite3 failing the whole read without one. The
        fast path keeps sqlite3's own decoding: a Python text factory costs every cell of every read."""
        try:
            return self.db.execute(sql, parameters).fetchall()
        except sqlite3.OperationalError as error:
            if not str(error).startswith(_UNDECODABLE):
                raise
        self.db.text_factory = _text_or_bytes
        try:
            return self.db.execute(sql, parameters).fetchall()
        finally:
            self.db.text_factory = str

    @contextlib.contextmanager
    def transaction(self, *, budget_ms: int | None = None) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the write lock from its start (waited for within `budget_ms`, the
        busy timeout by default). Whatever interrupts it (a signal, an error, a full disk) rolls it back."""
        self._patiently(lambda: self.db.execute("BEGIN IMMEDIATE"), budget_ms=budget_ms)
        self.db.text_factory = _text_or_bytes  # what a write reads back: a cell that is not UTF-8 fails no write
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:  # SQLite rolls some failures back itself
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
            raise
        finally:
            self.db.text_factory = str

    def write(self, work: Work, *, hurry: bool = False) -> None:
        """Run `work` in one write transaction, trying again (with a backoff) while the lock is held;
        `hurry`: one try of HURRIED_BUSY_TIMEOUT_MS (a run closing after an interrupt)."""
        attempts = 1 if hurry else WRITE_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                with self.transaction(budget_ms=HURRIED_BUSY_TIMEOUT_MS if hurry else None) as db:
                    work(SqliteWriter(db))
                return
            except sqlite3.Error as error:
                if not is_busy(error) or attempt == attempts:
                    busy_timeout_ms = HURRIED_BUSY_TIMEOUT_MS if hurry else self.busy_timeout_ms
                    raise history_error(
                        self.path, error, Access.WRITE, attempts=attempt, busy_timeout_ms=busy_timeout_ms
                    ) from None
            delay = min(self.busy_timeout_ms / 1000, 1.0) * 2 ** (attempt - 1)
            self.on_retry(
                f"the history is locked; trying again in {delay:g} s (attempt {attempt + 1} of {WRITE_ATTEMPTS})"
            )
            time.sleep(delay)


def _apply(db: sqlite3.Connection, statement: Statement) -> None:
    if not isinstance(statement, AddColumn):
        db.execute(statement)
        return
    found = {row[1] for row in db.execute(f"PRAGMA table_info({statement.table})").fetchall()}
    if found and statement.column not in found:  # no columns: no such table, nothing to add a column to
        db.execute(f"ALTER TABLE {statement.table} ADD COLUMN {statement.column} {statement.declaration}")
