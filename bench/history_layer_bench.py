"""What a database layer costs on the history's hot paths, on SQLite: the sqlite3 module the store uses vs
SQLAlchemy 2 Core (text() statements, and Core constructs) over the same file.

    record a stage    one transaction: delete the stage's old tests, insert 500 test rows
    reuse lookup      the newest finished run of a commit, diff and scope (one indexed row)

Run: .venv/bin/python bench/history_layer_bench.py  (needs `pip install sqlalchemy`; prints microseconds)
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

TESTS_PER_STAGE = 500
RUNS = 2_000
REPEATS = 30
LOOKUPS = 2_000

DDL = (
    "CREATE TABLE runs (run_id TEXT PRIMARY KEY, state TEXT NOT NULL, started_at REAL NOT NULL, "
    "code_commit TEXT NOT NULL, code_diff TEXT NOT NULL, scope TEXT NOT NULL)",
    "CREATE INDEX runs_by_code ON runs (code_commit, code_diff, scope, started_at)",
    "CREATE TABLE test_results (run_id TEXT NOT NULL, stage TEXT NOT NULL, test_id TEXT NOT NULL, outcome TEXT NOT "
    "NULL, duration_seconds REAL NOT NULL, recorded_at REAL NOT NULL, PRIMARY KEY (run_id, stage, test_id))",
)
INSERT = (
    "INSERT INTO test_results (run_id, stage, test_id, outcome, duration_seconds, recorded_at) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, stage, test_id) DO UPDATE SET outcome = excluded.outcome"
)
LOOKUP = (
    "SELECT run_id, state, started_at FROM runs WHERE code_commit = ? AND code_diff = ? AND scope = ? "
    "AND state != ? ORDER BY started_at DESC, rowid DESC LIMIT 1"
)


def _named(sql: str, names: list[str]) -> str:
    for name in names:
        sql = sql.replace("?", f":{name}", 1)
    return sql


def _rows(stage: int) -> list[tuple[object, ...]]:
    return [
        ("run-1", f"stage-{stage}", f"tests/t.py::test_{i}", "passed", 0.01 * i, 1.0) for i in range(TESTS_PER_STAGE)
    ]


def _setup(path: Path) -> None:
    db = sqlite3.connect(path)
    for statement in DDL:
        db.execute(statement)
    db.executemany(
        "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?)",
        [(f"run-{i}", "passed", float(i), f"c{i % 500}", "", "pre-merge") for i in range(RUNS)],
    )
    db.commit()
    db.close()


def _median_us(work: Callable[[int], None], repeats: int) -> float:
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        work(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    folder = Path(tempfile.mkdtemp())
    raw_path, sa_path = folder / "raw.sqlite", folder / "sa.sqlite"
    _setup(raw_path)
    _setup(sa_path)
    raw = sqlite3.connect(raw_path, isolation_level=None)
    engine = sa.create_engine(f"sqlite:///{sa_path}")
    conn = engine.connect()
    columns = ["run_id", "stage", "test_id", "outcome", "duration_seconds", "recorded_at"]
    insert_text = sa.text(_named(INSERT, columns))
    metadata = sa.MetaData()
    runs = sa.Table("runs", metadata, autoload_with=engine)
    results = sa.Table("test_results", metadata, autoload_with=engine)

    def raw_record(i: int) -> None:
        raw.execute("BEGIN IMMEDIATE")
        raw.execute("DELETE FROM test_results WHERE run_id = ? AND stage = ?", ("run-1", f"stage-{i}"))
        raw.executemany(INSERT, _rows(i))
        raw.execute("COMMIT")

    def sa_text_record(i: int) -> None:
        with conn.begin():
            conn.execute(
                sa.text("DELETE FROM test_results WHERE run_id = :r AND stage = :s"), {"r": "run-1", "s": f"stage-{i}"}
            )
            conn.execute(insert_text, [dict(zip(columns, row, strict=True)) for row in _rows(i)])

    def sa_core_record(i: int) -> None:
        with conn.begin():
            conn.execute(results.delete().where(results.c.run_id == "run-1", results.c.stage == f"stage-{i}"))
            conn.execute(results.insert(), [dict(zip(columns, row, strict=True)) for row in _rows(i)])

    lookup_text = sa.text(_named(LOOKUP, ["c", "d", "s", "x"]))
    lookup_core = (
        sa.select(runs.c.run_id, runs.c.state, runs.c.started_at)
        .where(runs.c.code_commit == sa.bindparam("c"), runs.c.code_diff == sa.bindparam("d"))
        .where(runs.c.scope == sa.bindparam("s"), runs.c.state != sa.bindparam("x"))
        .order_by(runs.c.started_at.desc())
        .limit(1)
    )

    def raw_lookup(i: int) -> None:
        raw.execute(LOOKUP, (f"c{i % 500}", "", "pre-merge", "running")).fetchone()

    def sa_text_lookup(i: int) -> None:
        conn.execute(lookup_text, {"c": f"c{i % 500}", "d": "", "s": "pre-merge", "x": "running"}).fetchone()

    def sa_core_lookup(i: int) -> None:
        conn.execute(lookup_core, {"c": f"c{i % 500}", "d": "", "s": "pre-merge", "x": "running"}).fetchone()

    print(f"sqlite {sqlite3.sqlite_version}, SQLAlchemy {sa.__version__}; median microseconds")
    print(f"{'':24}{'sqlite3':>10}{'SA text':>10}{'SA Core':>10}")
    record = [_median_us(f, REPEATS) for f in (raw_record, sa_text_record, sa_core_record)]
    print(f"{'record 500 tests':24}" + "".join(f"{t:10.0f}" for t in record))
    lookup = [_median_us(f, LOOKUPS) for f in (raw_lookup, sa_text_lookup, sa_core_lookup)]
    print(f"{'reuse lookup':24}" + "".join(f"{t:10.1f}" for t in lookup))
    print(
        f"ratios vs sqlite3: record {record[1] / record[0]:.2f}x / {record[2] / record[0]:.2f}x, "
        f"lookup {lookup[1] / lookup[0]:.2f}x / {lookup[2] / lookup[0]:.2f}x"
    )


if __name__ == "__main__":
    main()
