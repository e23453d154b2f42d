"""The history's tables and their numbered migrations: one schema for both backends (SQLite, PostgreSQL).

The statements are written once, in the SQL both backends speak; the PostgreSQL backend widens SQLite's
type names where PostgreSQL's are narrower (REAL is 4 bytes there: DOUBLE PRECISION; INTEGER: BIGINT) and
gives each table the insertion order SQLite keeps as `rowid` (postgres_backend.postgres_ddl).

A new history gets the version 1 tables (BASE) and then every step; an older one the steps past its version.
Each step is small and stands alone, so steps written on other branches merge as further rows of MIGRATIONS.
Every step is idempotent (`IF NOT EXISTS`, AddColumn), so a history whose version row was edited back,
deleted, or half-migrated by hand is brought up to date instead of failing on "duplicate column name"; a
backend runs the steps of one open in one write transaction (both backends' DDL is transactional).

No migration library (alembic and yoyo-migrations were weighed): the two backends share one statement list here;
alembic brings SQLAlchemy (and Mako) as dependencies and its own `alembic_version` table; yoyo reads its steps from
a folder of script files and keeps its own `_yoyo_migrations` and `yoyo_lock` tables. Both decide what to run from
their own record and run a step as written, so a history edited back by hand replays steps that fail (SQLite has no
`ADD COLUMN IF NOT EXISTS`) where these steps bring it up to date. Revisit for steps that must rewrite data or be
undone (downgrades), or for a third backend whose SQL differs by more than postgres_ddl's type widening.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ci_tool.errors import HistoryError, Where

TABLES = ("runs", "stages", "test_results")

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

# Migration step 4: the perf-sanity cases' results (history/perf_results.py reads and writes them)
PERF_RESULTS = (
    """CREATE TABLE IF NOT EXISTS perf_results (
    run_id TEXT NOT NULL,
    stage TEXT NOT NULL,
    case_id TEXT NOT NULL,
    gpu TEXT NOT NULL,
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    baseline REAL,
    threshold REAL,
    verdict TEXT NOT NULL,
    note TEXT NOT NULL DEFAULT '',
    test_id TEXT NOT NULL DEFAULT '',
    post_merge INTEGER NOT NULL DEFAULT 0,
    branch TEXT NOT NULL DEFAULT '',
    commit_sha TEXT NOT NULL DEFAULT '',
    recorded_at REAL NOT NULL,
    PRIMARY KEY (run_id, stage, case_id, gpu, metric)
)""",
    "CREATE INDEX IF NOT EXISTS perf_results_by_key ON perf_results (case_id, gpu, metric, recorded_at)",
)
NOISE_STEP = 7  # the step that gave perf results their noise and rounds


@dataclass(frozen=True)
class AddColumn:
    """`ALTER TABLE <table> ADD COLUMN <column> <declaration>`, skipped where the column is there already
    (a step met again: a version row edited back, a step half-applied by hand) or the table is not (a
    history that never held it)."""

    table: str
    column: str
    declaration: str


TOUCH_STEP = 8  # the step of table touch_records
INPUTS_STEP = 9  # the step of stages.inputs_digest (reuse matches a stage's inputs, not only its code)

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
    (4, PERF_RESULTS),  # the perf-sanity cases' results (history/perf_results.py)
    (
        5,  # touch records: the tests that ran each file (history/touch_table.py)
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
        NOISE_STEP,  # a perf result's noise and rounds (rows from before: noise 0 over 1 round)
        (
            AddColumn("perf_results", "noise", "REAL NOT NULL DEFAULT 0"),
            AddColumn("perf_results", "rounds", "INTEGER NOT NULL DEFAULT 1"),
        ),
    ),
    (
        TOUCH_STEP,  # touch records per file, test and GPU type, with the units it ran, its stage and commit
        # (history/touch_table.py); step 5's rows come along with units, GPU type and stage unknown ('') and commit
        # '', so they never narrow a stage. `WHERE true`: SQLite reads an ON CONFLICT right after
        # `SELECT ... FROM t` as part of the SELECT.
        (
            "CREATE TABLE IF NOT EXISTS touch_records (source TEXT NOT NULL, test_id TEXT NOT NULL, "
            "gpu_type TEXT NOT NULL, units TEXT NOT NULL, stage TEXT NOT NULL, commit_sha TEXT NOT NULL, "
            "run_id TEXT NOT NULL, recorded_at REAL NOT NULL, PRIMARY KEY (source, test_id, gpu_type))",
            "CREATE INDEX IF NOT EXISTS touch_records_by_test ON touch_records (gpu_type, test_id)",
            "CREATE INDEX IF NOT EXISTS touch_records_by_commit ON touch_records (gpu_type, commit_sha)",
            "INSERT INTO touch_records (source, test_id, gpu_type, units, stage, commit_sha, run_id, recorded_at) "
            "SELECT source, test_id, '', '', '', '', run_id, recorded_at FROM touches WHERE true "
            "ON CONFLICT (source, test_id, gpu_type) DO NOTHING",
        ),
    ),
    (
        INPUTS_STEP,  # the digest of a stage's inputs (records.StageRecord.inputs); earlier rows: '', never reused
        (AddColumn("stages", "inputs_digest", "TEXT NOT NULL DEFAULT ''"),),
    ),
)
CODE_VERSION = 3  # the first version whose runs hold their code and scope
SCHEMA_VERSION = MIGRATIONS[-1][0]


BASE = tuple(statement for statement in SCHEMA.split(";") if statement.strip())


def steps_after(version: int | None) -> list[Statement]:
    """The statements that bring a history of `version` (None: no tables yet) to SCHEMA_VERSION."""
    statements: list[Statement] = list(BASE) if version is None else []
    for step, step_statements in MIGRATIONS:
        if step > (version or 1):
            statements += step_statements
    return statements


def refuse_foreign(where: str, tables: Sequence[str], *, kind: str, noun: str, option: str) -> None:
    """A database with tables but no `schema_version` is someone else's: refused, left as it is."""
    if tables:
        raise HistoryError(
            f"expected a ci-tool history (tables {', '.join(TABLES)}), found {kind} with other tables "
            f"({', '.join(repr(t) for t in tables)})",
            where=Where(where),
            hint=f"pass the history {noun} ci-tool writes (--history {option}); this one is left as it is",
        )


def checked_version(where: str, versions: Sequence[object], *, noun: str) -> int | None:
    """The one version row's value (None: the row was deleted, and the idempotent steps add what is
    missing); a newer version or a value ci-tool never writes is refused."""
    if not versions:
        return None
    found = versions[0] if len(versions) == 1 else versions
    if isinstance(found, int) and not isinstance(found, bool) and found > SCHEMA_VERSION:
        raise HistoryError(
            f"expected history schema version {SCHEMA_VERSION} or older, found {found}",
            where=Where(where),
            hint=f"a newer ci-tool wrote this {noun}; upgrade ci-tool or pass another --history",
        )
    if not isinstance(found, int) or isinstance(found, bool) or found < 1:
        raise HistoryError(
            f"expected history schema version 1 to {SCHEMA_VERSION}, found {found!r}",
            where=Where(where),
            hint="table schema_version was changed outside ci-tool: it holds one row, the version of the "
            f"{noun}'s tables; keep the {noun} aside and pass another --history if you do not know it",
        )
    return found
