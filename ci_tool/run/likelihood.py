"""What a run orders its stages' tests by (stages/priority.py), read at the edge: the history's failures of
the RECENT_FAILURE_DAYS before now, the tests the change's touch records say ran a changed file, and the test
files it changes."""

from __future__ import annotations

import time
from pathlib import Path

from ci_tool.change.value import ChangeSet
from ci_tool.errors import HistoryError
from ci_tool.history.failures import recent_failures
from ci_tool.history.flakiness import SECONDS_PER_DAY
from ci_tool.history.locator import History
from ci_tool.history.store import HistoryStore
from ci_tool.stages.priority import (
    RECENT_FAILURE_DAYS,
    Likelihood,
    RecentFailure,
    changed_test_files,
    touching_tests,
)


def read_likelihood(
    history: History | None, changes: ChangeSet | None, *, now: float | None = None, unreadable_ok: bool = False
) -> Likelihood:
    """The recent failures `history` holds (none when it is a file not made yet) and the tests touching
    `changes` (none without a change). `unreadable_ok`: a history that cannot be read gives no failures
    instead of a HistoryError (a run: it reports that history on its own path and keeps its results)."""
    try:
        failures = _failures(history, time.time() if now is None else now)
    except HistoryError:
        if not unreadable_ok:
            raise
        failures = ()
    return Likelihood(failures, touching_tests(changes), changed_test_files(changes))


def _failures(history: History | None, now: float) -> tuple[RecentFailure, ...]:
    if history is None or (isinstance(history, Path) and not history.is_file()):
        return ()
    with HistoryStore(history, read_only=True) as store:
        return recent_failures(store, since=now - RECENT_FAILURE_DAYS * SECONDS_PER_DAY, before=now)
