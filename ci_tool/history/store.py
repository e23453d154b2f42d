"""The history store: runs, stages and tests, on SQLite (one file, the embedded default) or PostgreSQL (one
database shared by many runners), behind one schema and one list of migrations (schema.py).

    runs          one row per `ci-tool run` / `ci-tool stage run`, with the code it tested (commit and
                  the hash of the uncommitted change) and its request scope: what reuse matches on
    stages        one row per stage of a run (also stages that waited or were skipped, with why)
    test_results  one row per test of a stage: first outcome, rerun outcome, duration, waive, signature
    dispatches    the bot's ledger: one row per /bot comment and request it triggered a build for (ledger.py)
    perf_results  one row per perf-sanity case, GPU type and metric of a stage (perf_results.py)
    touch_records which test ran which unit of which file, per GPU type, stage and commit, as the latest
                  touch-recording run of each test on that GPU type saw it (history/touch_table.py;
                  change-based selection's touched rule)

Where the history is (a path or a `postgresql://` URL) is locator.py's; how each database is opened,
locked, migrated and what its errors mean, sqlite_backend.py's and postgres_backend.py's. Every write is one
transaction; a stage recorded again (a retried agent) replaces its earlier record, so it is one record.
Every open for writing sweeps the runs whose owner died (owners.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence

from ci_tool.errors import HistoryError, Where
from ci_tool.history import owners
from ci_tool.history.backend import Backend, Row, Work, Writer, upsert
from ci_tool.history.locator import HISTORY_ENV, History, PostgresUrl, history_location, locate
from ci_tool.history.records import RunRecord, StageRecord, StageRecords, TestRecord
from ci_tool.history.schema import CODE_VERSION, SCHEMA_VERSION, TABLES
from ci_tool.history.sqlite_backend import BUSY_TIMEOUT_MS, SqliteHistory
from ci_tool.outcomes import RunState

__all__ = ["BUSY_TIMEOUT_MS", "CODE_VERSION", "HISTORY_ENV", "SCHEMA_VERSION", "TABLES", "Row", "history_path"]

history_path = history_location  # `--history`, else $CI_TOOL_HISTORY, else the default file


class HistoryStore:
    """An open history. Use as a context manager, or call `close()`.

    `read_only`: the history must exist and is never written (except to create its tables when it has
    none and can be written). `on_retry` hears why a write waits before it is tried again; `warn` hears
    each bad row a reader leaves out (rows.py), by default on stderr as `warning: ...`. `path` names the
    history in messages: a Path, or a PostgresUrl whose `str()` has no password.
    """

    def __init__(
        self,
        path: str | History,
        *,
        create: bool = True,
        read_only: bool = False,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        on_retry: Callable[[str], None] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.path: History = locate(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.on_retry = on_retry or (lambda message: None)
        self.warn = warn or _warn_on_stderr
        self.backend: Backend = self._open(create=create, read_only=read_only)
        self.version = self.backend.version
        if not read_only:
            try:
                owners.sweep_stale_runs(self)
            except BaseException:
                self.backend.close()
                raise

    def _open(self, *, create: bool, read_only: bool) -> Backend:
        if isinstance(self.path, PostgresUrl):
            from ci_tool.history.postgres_backend import PostgresHistory  # psycopg: the `postgres` extra

            return PostgresHistory(self.path, read_only=read_only, busy_timeout_ms=self.busy_timeout_ms)
        return SqliteHistory(
            self.path, create=create, read_only=read_only, busy_timeout_ms=self.busy_timeout_ms, on_retry=self.on_retry
        )

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.backend.close()

    @property
    def db(self) -> object:
        """The SQLite connection (tests look at the file through it); a PostgreSQL history has none."""
        if not isinstance(self.backend, SqliteHistory):
            raise AttributeError("a PostgreSQL history has no SQLite connection")
        return self.backend.db

    def group_concat(self, expression: str) -> str:
        """SQL joining a group's non-NULL `expression` values with ',' (each backend spells it its way)."""
        return self.backend.group_concat(expression)

    # -- reads ------------------------------------------------------------------------------------

    def rows(self, sql: str, parameters: Sequence[object] = ()) -> list[Row]:
        """Every row of a query, untyped: rows.py makes them values. A database error (a damaged page, a
        server gone) is a located HistoryError."""
        return self.backend.rows(sql, parameters)

    def row(self, sql: str, parameters: Sequence[object] = ()) -> Row | None:
        found = self.rows(sql, parameters)
        return found[0] if found else None

    # -- writes -----------------------------------------------------------------------------------

    def write(self, work: Work) -> None:
        """Run `work` in one write transaction with the backend's retries (for the tables other modules
        own: perf_results.py, touch_table.py, ledger.py)."""
        self.backend.write(work)

    def start_run(self, run: RunRecord) -> None:
        """Record a run as it starts, owned by this process (the stale-run sweep closes it if we die)."""
        owner = owners.this_process()

        def start(db: Writer) -> None:
            _insert_run(db, run, upsert=False)
            db.execute(
                "UPDATE runs SET owner_pid = ?, owner_start = ? WHERE run_id = ?", (owner.pid, owner.start, run.run_id)
            )

        self.backend.write(start)

    def finish_run(self, run_id: str, *, state: RunState, finished_at: float, hurry: bool = False) -> None:
        """Close a run; `hurry` (after an interrupt): one short try, the sweep closes it if that fails."""

        def finish(db: Writer) -> None:
            found = db.execute(
                "UPDATE runs SET state = ?, finished_at = ? WHERE run_id = ?", (state, finished_at, run_id)
            )
            if found.rowcount == 0:
                raise HistoryError(f"expected a recorded run, found no run {run_id!r}", where=Where(str(self.path)))

        self.backend.write(finish, hurry=hurry)

    def record_stage(
        self, stage: StageRecord, tests: Sequence[TestRecord] = (), *, recorded_at: float, hurry: bool = False
    ) -> None:
        """Store a stage and its tests in one transaction (replacing an earlier record of the same stage)."""
        self.backend.write(lambda db: _insert_stage(db, stage, tests, recorded_at), hurry=hurry)

    def record_run(self, run: RunRecord, stages: Sequence[StageRecords]) -> None:
        """Store a whole run in one transaction, replacing what is recorded of it (an import)."""

        def record(db: Writer) -> None:
            _insert_run(db, run, upsert=True)
            for stage, tests, recorded_at in stages:
                _insert_stage(db, stage, tests, recorded_at)

        self.backend.write(record)


_RUN_COLUMNS = (
    "run_id", "command", "state", "started_at", "finished_at", "host", "details_json", "code_commit", "code_diff",
    "scope",
)  # fmt: skip
_STAGE_COLUMNS = (
    "run_id", "name", "state", "reason", "started_at", "duration_seconds", "passed", "failed", "skipped",
    "results_dir", "details_json", "inputs_digest",
)  # fmt: skip
_TEST_COLUMNS = (
    "run_id", "stage", "test_id", "outcome", "rerun_outcome", "duration_seconds", "waive_reason", "kind", "message",
    "signature", "output_head", "recorded_at",
)  # fmt: skip
_INSERT_RUN = f"INSERT INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' for _ in _RUN_COLUMNS)})"
_UPSERT_RUN = upsert("runs", _RUN_COLUMNS, ("run_id",))
_INSERT_STAGE = f"INSERT INTO stages ({', '.join(_STAGE_COLUMNS)}) VALUES ({', '.join('?' for _ in _STAGE_COLUMNS)})"
_UPSERT_TEST = upsert("test_results", _TEST_COLUMNS, ("run_id", "stage", "test_id"))


def _insert_run(db: Writer, run: RunRecord, *, upsert: bool) -> None:
    db.execute(
        _UPSERT_RUN if upsert else _INSERT_RUN,
        (
            run.run_id, run.command, run.state, run.started_at, run.finished_at, run.host, _json(run.details),
            run.code_commit, run.code_diff, run.scope,
        ),
    )  # fmt: skip


def _insert_stage(db: Writer, stage: StageRecord, tests: Sequence[TestRecord], recorded_at: float) -> None:
    """The stage's earlier record goes (a stage recorded again moves to the end, as SQLite's rowid order
    shows it); two agents recording one stage at once take turns (`lock`), so one whole record stays."""
    db.lock(f"stage {stage.run_id!r} {stage.name!r}")
    db.execute("DELETE FROM test_results WHERE run_id = ? AND stage = ?", (stage.run_id, stage.name))
    db.execute("DELETE FROM stages WHERE run_id = ? AND name = ?", (stage.run_id, stage.name))
    db.execute(
        _INSERT_STAGE,
        (
            stage.run_id, stage.name, stage.state, stage.reason, stage.started_at, stage.duration_seconds,
            stage.passed, stage.failed, stage.skipped, stage.results_dir, _json(stage.details), stage.inputs,
        ),
    )  # fmt: skip
    db.executemany(
        _UPSERT_TEST,
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
