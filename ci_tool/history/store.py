"""The SQLite history store: one file, many writers.

    runs          one row per `ci-tool run` / `ci-tool stage run`
    stages        one row per stage of a run (also stages that waited or were skipped, with why)
    test_results  one row per test of a stage: first outcome, rerun outcome, duration, waive, signature

Concurrent stage processes write at once without losing rows: WAL journal, a busy timeout, and every
write is one `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so two writers never
deadlock upgrading a read lock). `schema_version` holds the version; a newer file is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ci_tool.errors import HistoryError, Where
from ci_tool.layout import HISTORY_PATH
from ci_tool.outcomes import RunState, StageState, TestOutcome

SCHEMA_VERSION = 1
HISTORY_ENV = "CI_TOOL_HISTORY"
BUSY_TIMEOUT_MS = 60_000

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


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    command: str
    state: RunState
    started_at: float
    finished_at: float | None = None
    host: str = ""
    details: Mapping[str, object] = field(default_factory=dict)


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


class HistoryStore:
    """An open history file. Use as a context manager, or call `close()`."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise HistoryError(
                "expected a history file, found none",
                where=Where(str(self.path)),
                hint="run `ci-tool run` or `ci-tool stage run` first, or pass --history PATH",
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except (sqlite3.Error, OSError) as error:
            raise HistoryError(f"cannot open the history: {error}", where=Where(str(self.path))) from None

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the write lock from its start."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _migrate(self) -> None:
        with self.transaction() as db:
            for statement in _SCHEMA.split(";"):  # executescript() would commit the open transaction
                if statement.strip():
                    db.execute(statement)
            row = db.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] > SCHEMA_VERSION:
                raise HistoryError(
                    f"expected history schema version {SCHEMA_VERSION} or older, found {row[0]}",
                    where=Where(str(self.path)),
                    hint="a newer ci-tool wrote this file; upgrade ci-tool or pass another --history",
                )

    # -- writes -----------------------------------------------------------------------------------

    def start_run(self, run: RunRecord) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO runs (run_id, command, state, started_at, finished_at, host, details_json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (run.run_id, run.command, run.state, run.started_at, run.finished_at, run.host, _json(run.details)),
            )

    def finish_run(self, run_id: str, *, state: RunState, finished_at: float) -> None:
        with self.transaction() as db:
            found = db.execute(
                "UPDATE runs SET state = ?, finished_at = ? WHERE run_id = ?", (state, finished_at, run_id)
            )
            if found.rowcount == 0:
                raise HistoryError(f"expected a recorded run, found no run {run_id!r}", where=Where(str(self.path)))

    def record_stage(self, stage: StageRecord, tests: Sequence[TestRecord] = (), *, recorded_at: float) -> None:
        """Store a stage and its tests in one transaction (replacing an earlier record of the same stage)."""
        with self.transaction() as db:
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
