"""The tests that failed recently, for ordering a stage's tests by how likely they are to fail
(stages/priority.py): every test whose first attempt failed (or errored) in a run started in [since, before),
on any stage, and whether a rerun saved each of those failures.

A bad row is left out with a warning: the answer sums over many runs, and a stage still runs (in a poorer
order) without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ci_tool.history import rows
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import TestOutcome
from ci_tool.stages.priority import RecentFailure

_COLUMNS = "t.test_id, t.rerun_outcome, r.run_id, t.stage"
_FAILED = (
    f"SELECT {_COLUMNS} FROM test_results t JOIN runs r ON r.run_id = t.run_id "
    "WHERE r.started_at >= ? AND r.started_at < ? AND t.outcome IN (?, ?) ORDER BY t.test_id"
)


def _failure(store: HistoryStore, row: Sequence[Any]) -> RecentFailure:
    r = rows.view(store, "test_results", _COLUMNS, row).keyed(**{"r.run_id": "run id", "t.stage": "stage"})
    rerun = r.optional_vocabulary("t.rerun_outcome", TestOutcome)  # the query chose the failed first attempts
    return RecentFailure(r.key_text("t.test_id"), stayed_red=rerun is None or rerun.is_failure)


def recent_failures(store: HistoryStore, *, since: float, before: float) -> tuple[RecentFailure, ...]:
    """The tests that failed in runs started in [since, before), by test id; a test stayed red when any of
    its failures did."""
    failed = (TestOutcome.FAILED.value, TestOutcome.ERROR.value)
    raw = store.rows(_FAILED, (since, before, *failed))
    found: dict[str, bool] = {}
    for failure in rows.read(store, raw, lambda row: _failure(store, row), skip=True):
        found[failure.test_id] = found.get(failure.test_id, False) or failure.stayed_red
    return tuple(RecentFailure(test_id, stayed_red) for test_id, stayed_red in sorted(found.items()))
