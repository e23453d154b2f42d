"""Every run at a glance, for the dashboard's run list: its record, stage and test counts, and a fingerprint
that changes whenever the run, one of its stages or one of its tests changes (recording a run again, a
`history import`, a stage recorded late), so `ci-tool site` rebuilds only the run pages that changed.
Three queries, whatever the number of runs."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ci_tool.history import queries, rows
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord
from ci_tool.outcomes import StageState


@dataclass(frozen=True)
class RunSummary:
    run: RunRecord
    stages: int
    waiting: int  # stages left for CI's runners
    passed: int
    failed: int
    skipped: int
    fingerprint: str


def run_summaries(store: HistoryStore, *, limit: int) -> list[RunSummary]:
    """The newest `limit` runs, newest first."""
    runs = queries.recent_runs(store, limit=limit)
    window = "SELECT run_id FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?"
    stage_rows = store.rows(
        f"SELECT {rows.STAGE_COLUMNS} FROM stages WHERE run_id IN ({window}) ORDER BY rowid", (limit,)
    )
    test_rows = store.rows(
        "SELECT run_id, count(*), max(recorded_at), coalesce(sum(duration_seconds), 0.0), "
        f"{store.group_concat('outcome || rerun_outcome')} "
        f"FROM test_results WHERE run_id IN ({window}) GROUP BY run_id",
        (limit,),
    )
    stages: dict[str, list[StageRecord]] = defaultdict(list)
    for stage in rows.read(store, stage_rows, lambda row: rows.stage_record(store, row), skip=True):  # a list
        stages[stage.run_id].append(stage)
    tests = {row[0]: tuple(row[1:]) for row in test_rows}
    return [_summary(run, stages.get(run.run_id, []), tests.get(run.run_id, ())) for run in runs]


def _summary(run: RunRecord, stages: list[StageRecord], tests: tuple[Any, ...]) -> RunSummary:
    recorded = [run.run_id, run.command, run.state, run.started_at, run.finished_at, run.host, run.details]
    stage_fields = [dataclasses.astuple(stage)[1:] for stage in stages]
    digest = hashlib.sha256(
        json.dumps([recorded, stage_fields, tests], sort_keys=True, default=str).encode()
    ).hexdigest()
    return RunSummary(
        run,
        stages=len(stages),
        waiting=sum(1 for stage in stages if stage.state is StageState.WAITING),
        passed=sum(stage.passed for stage in stages),
        failed=sum(stage.failed for stage in stages),
        skipped=sum(stage.skipped for stage in stages),
        fingerprint=digest[:16],
    )
