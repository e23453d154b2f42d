"""The dispatch ledger in the history: written before the POST, moved on as Jenkins names the queue item and
the build; a history of schema 1 gains the table when opened."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from ci_tool.history.ledger import DispatchKey, DispatchRecord, find_dispatch, record_dispatch
from ci_tool.history.store import SCHEMA_VERSION, HistoryStore
from ci_tool.outcomes import DispatchState

KEY = DispatchKey("http://jenkins/", "L0_MergeRequest", 987654321, '{"command": "run", "flags": {}}')


def test_a_dispatch_moves_from_triggering_to_started(tmp_path: Path) -> None:
    record = DispatchRecord(KEY, "example/ci-tool", 123, "a" * 40, DispatchState.TRIGGERING, updated_at=1.0)
    with HistoryStore(tmp_path / "h.sqlite") as store:
        assert find_dispatch(store, KEY) is None
        record_dispatch(store, record)
        assert find_dispatch(store, KEY) == record
        started = replace(record, state=DispatchState.STARTED, updated_at=2.0, queue_id=40, build_number=7)
        record_dispatch(store, started)
        assert find_dispatch(store, KEY) == started
        edited = '{"command": "run", "flags": {"post_merge": true}}'
        other = DispatchKey(KEY.jenkins_url, KEY.job, KEY.comment_id, edited)
        assert find_dispatch(store, other) is None  # an edit that changed the request is another dispatch


def test_a_schema_1_history_gains_the_ledger(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (1)")
        db.execute("CREATE TABLE runs (run_id TEXT PRIMARY KEY, command TEXT NOT NULL, state TEXT NOT NULL, "
                   "started_at REAL NOT NULL, finished_at REAL, host TEXT NOT NULL DEFAULT '', "
                   "details_json TEXT NOT NULL DEFAULT '{}')")  # fmt: skip
        db.execute("INSERT INTO runs (run_id, command, state, started_at) VALUES ('r1', 'run', 'passed', 1)")
    db.close()
    with HistoryStore(path) as store:
        assert store.rows("SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
        assert store.rows("SELECT run_id FROM runs") == [("r1",)]
        assert find_dispatch(store, KEY) is None
