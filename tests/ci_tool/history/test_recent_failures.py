"""The recent failures a stage's order reads (history/failures.py), over a real history on both backends."""

from __future__ import annotations

from pathlib import Path

from ci_tool.history.failures import recent_failures
from ci_tool.history.store import HistoryStore, TestRecord
from ci_tool.outcomes import TestOutcome
from ci_tool.stages.priority import RecentFailure
from tests.ci_tool.history.planted import DAY_ONE, HOUR, PASSED, PLANTED, RERUN, failed, record_run

BROKEN = "a.py::test_broken"


def test_the_window_s_failures_are_red_unless_a_rerun_saved_each(planted_store: HistoryStore) -> None:
    assert recent_failures(planted_store, since=DAY_ONE, before=DAY_ONE + 7 * HOUR) == (
        RecentFailure(BROKEN, stayed_red=True),
        RecentFailure(PLANTED, stayed_red=True),
        RecentFailure(RERUN, stayed_red=False),
    )


def test_only_runs_started_inside_the_window_count(planted_store: HistoryStore) -> None:
    """r1 and r2 start before DAY_ONE + 2 h: the planted test first fails in r3."""
    assert recent_failures(planted_store, since=DAY_ONE, before=DAY_ONE + 2 * HOUR) == (
        RecentFailure(BROKEN, stayed_red=True),
        RecentFailure(RERUN, stayed_red=False),
    )


def test_a_window_after_the_runs_finds_nothing(planted_store: HistoryStore) -> None:
    assert recent_failures(planted_store, since=DAY_ONE + 6 * HOUR, before=DAY_ONE + 9 * HOUR) == ()


def test_one_failure_no_rerun_saved_makes_the_test_red(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        record_run(store, "v1", DAY_ONE, {"CPU-Generic-1": (10.0, [failed("c.py::t", "E: x", rerun=PASSED)])})
        record_run(store, "v2", DAY_ONE + HOUR, {"CPU-Generic-2": (10.0, [failed("c.py::t", "E: x")])})
        found = recent_failures(store, since=DAY_ONE, before=DAY_ONE + 2 * HOUR)
    assert found == (RecentFailure("c.py::t", stayed_red=True),)


def test_an_error_counts_as_a_failure(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        record_run(store, "v1", DAY_ONE, {"CPU-Generic-1": (10.0, [TestRecord("c.py", TestOutcome.ERROR, 0.0)])})
        found = recent_failures(store, since=DAY_ONE, before=DAY_ONE + HOUR)
    assert found == (RecentFailure("c.py", stayed_red=True),)


def test_a_bad_row_is_left_out_with_a_warning(tmp_path: Path) -> None:
    warnings: list[str] = []
    path = tmp_path / "h.sqlite"
    with HistoryStore(path, warn=warnings.append) as store:
        record_run(store, "v1", DAY_ONE, {"CPU-Generic-1": (10.0, [failed("c.py::t", "E: x"), failed("c.py::u", "E")])})
        store.db.execute("UPDATE test_results SET rerun_outcome = 'exploded' WHERE test_id = 'c.py::u'")  # type: ignore[attr-defined]
        found = recent_failures(store, since=DAY_ONE, before=DAY_ONE + HOUR)
    assert found == (RecentFailure("c.py::t", stayed_red=True),)
    assert warnings == [
        f"{path}: table test_results, run id 'v1', stage 'CPU-Generic-1', column rerun_outcome: expected a "
        "TestOutcome (passed, failed, error, skipped), found 'exploded' Hint: the history was changed outside "
        f"ci-tool: fix or delete that row, or keep the file aside (`mv {path} {path}.damaged`) and ci-tool starts "
        "a new history there; the row is left out"
    ]
