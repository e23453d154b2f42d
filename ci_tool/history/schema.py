"""The history's schema: the version 1 tables and one small migration step per later version.

Each step stands alone, so steps written on other branches merge as further rows of MIGRATIONS. Every
step is idempotent (`IF NOT EXISTS`, AddColumn), so a file whose version row was edited back, deleted, or
half-migrated by hand is brought up to date instead of failing on "duplicate column name"; store.py runs
the steps of one open in one write transaction (SQLite's DDL is transactional).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ci_tool.history import perf_results

SCHEMA = """
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
class AddColumn:
    """`ALTER TABLE <table> ADD COLUMN <column> <declaration>`, skipped where the column is there already:
    a step met again (a version row edited back, a step half-applied by hand) does not fail on it."""

    table: str
    column: str
    declaration: str


Statement = str | AddColumn  # a plain statement must be idempotent itself (`IF NOT EXISTS`)

# Version -> the statements that take a file of the version before it there. Each step is small and
# stands alone, so steps written on other branches merge as further rows.
MIGRATIONS: tuple[tuple[int, tuple[Statement, ...]], ...] = (
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
            AddColumn("runs", "code_commit", "TEXT NOT NULL DEFAULT ''"),
            AddColumn("runs", "code_diff", "TEXT NOT NULL DEFAULT ''"),
            AddColumn("runs", "scope", "TEXT NOT NULL DEFAULT ''"),
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
    (
        6,  # who owns a running run: the stale-run sweep closes those whose owner died (owners.py)
        (AddColumn("runs", "owner_pid", "INTEGER"), AddColumn("runs", "owner_start", "TEXT NOT NULL DEFAULT ''")),
    ),
    (
        perf_results.NOISE_STEP,  # a perf result's noise and rounds (rows from before: noise 0 over 1 round)
        (
            AddColumn("perf_results", "noise", "REAL NOT NULL DEFAULT 0"),
            AddColumn("perf_results", "rounds", "INTEGER NOT NULL DEFAULT 1"),
        ),
    ),
)
CODE_VERSION = 3  # the first version whose runs hold their code and scope
SCHEMA_VERSION = MIGRATIONS[-1][0]


def apply(db: sqlite3.Connection, statement: Statement) -> None:
    if not isinstance(statement, AddColumn):
        db.execute(statement)
        return
    found = {row[1] for row in db.execute(f"PRAGMA table_info({statement.table})").fetchall()}
    if statement.column not in found:
        db.execute(f"ALTER TABLE {statement.table} ADD COLUMN {statement.column} {statement.declaration}")
