"""Touch records in the history (history/touch_table.py), on SQLite and PostgreSQL in turn: per unit, GPU type,
stage and commit; a later record of a test on a GPU type replaces its earlier one there; step 5's file-grain
rows migrate with everything unknown."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.change.touch_records import OUTSIDE_TESTS
from ci_tool.history.backend import Writer
from ci_tool.history.locator import History
from ci_tool.history.schema import TOUCH_STEP
from ci_tool.history.store import SCHEMA_VERSION, HistoryStore
from ci_tool.history.touch_table import (
    TouchRow,
    WholeStage,
    record_commits,
    record_touches,
    recorded_tests,
    rows_of_files,
    stamped,
    touching_tests,
)


@pytest.fixture
def store(history_at: History) -> Generator[HistoryStore]:
    with HistoryStore(history_at) as opened:
        yield opened


def row(source: str, unit: str, test: str, gpu_type: str = "CPU", commit: str = "c001") -> TouchRow:
    return TouchRow(source, unit, test, gpu_type, f"{gpu_type}-Generic-1", commit)


def test_a_later_record_of_a_test_replaces_its_rows_on_that_gpu_type_only(store: HistoryStore) -> None:
    record_touches(store, "r1", [row("a.py", "f", "t1"), row("a.py", "f", "t1", "A10"), row("b.py", "g", "t2")],
                   recorded_at=1.0)  # fmt: skip
    record_touches(store, "r2", [row("b.py", "g", "t1", commit="c002")], recorded_at=2.0)  # t1 on CPU: only b now
    found, bad = rows_of_files(store, ["a.py", "b.py", "c.py"])
    assert (sorted(found, key=lambda r: (r.source, r.test_id, r.gpu_type)), bad) == (
        [row("a.py", "f", "t1", "A10"), row("b.py", "g", "t1", commit="c002"), row("b.py", "g", "t2")],
        set(),
    )


def test_the_commits_of_the_records_are_kept_per_gpu_type(store: HistoryStore) -> None:
    record_touches(store, "r1", [row("a.py", "f", "t1"), row("a.py", "f", "t2", commit="c002"),
                                 row("a.py", "f", "t1", "A10", "c003")], recorded_at=1.0)  # fmt: skip
    assert record_commits(store) == {"CPU": frozenset({"c001", "c002"}), "A10": frozenset({"c003"})}


def test_the_tests_touching_files_are_found_per_gpu_type_and_commit(store: HistoryStore) -> None:
    record_touches(store, "r1", [row("a.py", "f", "t1"), row("b.py", "g", "t2"), row("a.py", "f", "t3", "A10"),
                                 row("a.py", "h", "t4", commit="c002")], recorded_at=1.0)  # fmt: skip
    assert touching_tests(store, gpu_type="CPU", commit="c001", files=["a.py", "z.py"]) == {"t1"}


def test_a_file_the_work_tree_changed_is_stamped_stale() -> None:
    touches = {("a.py", "f"): frozenset({"t1"}), ("b.py", "<module>"): frozenset({"t2"})}
    assert stamped(touches, stage="A10-PyTorch-1", gpu_type="A10", commit="c001", dirty={"b.py"}) == [
        TouchRow("a.py", "f", "t1", "A10", "A10-PyTorch-1", "c001"),
        TouchRow("b.py", "<module>", "t2", "A10", "A10-PyTorch-1", ""),
    ]


def set_back(history: History, *statements: str) -> None:
    """Run `statements`, then set the version row back to the one before TOUCH_STEP."""

    def write(db: Writer) -> None:
        for statement in statements:
            db.execute(statement)
        db.execute("UPDATE schema_version SET version = ?", (TOUCH_STEP - 1,))

    with HistoryStore(history) as store:
        store.write(write)


def test_file_grain_rows_of_step_five_migrate_with_everything_unknown(history_at: History) -> None:
    """A history at the version before TOUCH_STEP holding a step-5 row, opened twice over (the second time as
    a version row set back by hand would have it): the row is in touch_records once, with unit, GPU type and
    stage unknown and commit '' (stale)."""
    set_back(history_at, "INSERT INTO touches VALUES ('src/a.py', 'tests/test_a.py::test_x', 'r0', 5.0)")
    set_back(history_at)
    with HistoryStore(history_at) as store:
        found = store.rows("SELECT source, test_id, gpu_type, units, stage, commit_sha, run_id FROM touch_records")
        version = store.rows("SELECT version FROM schema_version")
    assert (found, version) == ([("src/a.py", "tests/test_a.py::test_x", "", "", "", "", "r0")], [(SCHEMA_VERSION,)])


def test_a_stage_run_whole_drops_its_records_of_tests_that_are_gone_and_keeps_every_other(store: HistoryStore) -> None:
    other = TouchRow("a.py", "f", "t4", "CPU", "CPU-Generic-2", "c001")  # another stage's test
    record_touches(store, "r1", [row("a.py", "f", "t1"), row("a.py", "f", "t2"), row("b.py", "g", "t3"), other,
                                 row("a.py", "f", "t2", "A10")], recorded_at=1.0)  # fmt: skip
    # t2 was deleted; t3 ran but was skipped (no new record); t1 recorded again
    whole = WholeStage("CPU-Generic-1", "CPU", frozenset({"t1", "t3"}))
    record_touches(store, "r2", [row("a.py", "f", "t1", commit="c002")], recorded_at=2.0, whole_stage=whole)
    found, _ = rows_of_files(store, ["a.py", "b.py"])
    assert sorted((r.test_id, r.gpu_type, r.stage, r.commit) for r in found) == [
        ("t1", "CPU", "CPU-Generic-1", "c002"),
        ("t2", "A10", "A10-Generic-1", "c001"),  # the same test on another GPU type: that runner's business
        ("t3", "CPU", "CPU-Generic-1", "c001"),
        ("t4", "CPU", "CPU-Generic-2", "c001"),
    ]


def outside(source: str, unit: str, stage: str, commit: str = "c001") -> TouchRow:
    return TouchRow(source, unit, OUTSIDE_TESTS, "CPU", stage, commit)


def outside_rows(store: HistoryStore) -> list[tuple[str, str, str, str]]:
    found, _ = rows_of_files(store, ["a.py", "b.py"])
    return sorted((r.source, r.unit, r.stage, r.commit) for r in found if r.test_id == OUTSIDE_TESTS)


def test_what_two_stages_of_one_gpu_type_ran_outside_their_tests_is_kept_for_both(store: HistoryStore) -> None:
    """Post-merge records CPU-Generic and CPU-Generic-PerfSanity, both CPU: the second must not wipe what the
    first imported, or a change to a function that runs at import there would narrow."""
    first = WholeStage("CPU-Generic-1", "CPU", frozenset({"t1"}))
    second = WholeStage("CPU-PerfSanity-1", "CPU", frozenset({"t2"}))
    record_touches(store, "r1", [outside("a.py", "f", "CPU-Generic-1"), row("a.py", "f", "t1")],
                   recorded_at=1.0, whole_stage=first)  # fmt: skip
    record_touches(store, "r1", [outside("b.py", "g", "CPU-PerfSanity-1"), TouchRow("b.py", "g", "t2", "CPU",
                   "CPU-PerfSanity-1", "c001")], recorded_at=2.0, whole_stage=second)  # fmt: skip
    assert outside_rows(store) == [("a.py", "f", "CPU-Generic-1", "c001"), ("b.py", "g", "CPU-PerfSanity-1", "c001")]
    assert recorded_tests(store, gpu_type="CPU") == {"t1", "t2", OUTSIDE_TESTS}
    assert touching_tests(store, gpu_type="CPU", commit="c001", files=["a.py"]) == {"t1", OUTSIDE_TESTS}


def test_a_whole_stage_replaces_what_it_ran_outside_its_tests_and_a_part_of_it_only_adds(store: HistoryStore) -> None:
    whole = WholeStage("CPU-Generic-1", "CPU", frozenset({"t1"}))
    record_touches(store, "r1", [outside("a.py", "f", "CPU-Generic-1"), outside("b.py", "g", "CPU-Generic-1")],
                   recorded_at=1.0, whole_stage=whole)  # fmt: skip
    # a part of the stage (-k) collected only some modules: a.py's row grows and keeps its commit
    record_touches(store, "r2", [outside("a.py", "h", "CPU-Generic-1", "c002")], recorded_at=2.0)
    assert outside_rows(store) == [
        ("a.py", "f", "CPU-Generic-1", "c001"),
        ("a.py", "h", "CPU-Generic-1", "c001"),
        ("b.py", "g", "CPU-Generic-1", "c001"),
    ]
    # the whole stage again: what it ran outside its tests now is all it keeps
    record_touches(store, "r3", [outside("a.py", "h", "CPU-Generic-1", "c003")], recorded_at=3.0, whole_stage=whole)
    assert outside_rows(store) == [("a.py", "h", "CPU-Generic-1", "c003")]


def test_the_one_row_an_older_ci_tool_kept_for_every_stage_gives_way_to_the_stage_named_ones(
    store: HistoryStore,
) -> None:
    def older(db: Writer) -> None:  # as ci-tool wrote it before the rows named their stage
        db.execute("INSERT INTO touch_records VALUES ('a.py', ?, 'CPU', 'f', 'CPU-Generic-2', 'c000', 'r0', 0.0)",
                   (OUTSIDE_TESTS,))  # fmt: skip

    store.write(older)
    assert outside_rows(store) == [("a.py", "f", "CPU-Generic-2", "c000")]
    record_touches(store, "r1", [outside("b.py", "g", "CPU-Generic-1")], recorded_at=1.0)
    assert outside_rows(store) == [("b.py", "g", "CPU-Generic-1", "c001")]


_CELLS = st.one_of(
    st.text(max_size=12),
    st.binary(max_size=12),  # a text cell that may not be UTF-8 (`CAST(x'ff' AS TEXT)`)
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True),
    st.none(),
    st.sampled_from(["c001", "", "a.py", "CPU", "f\ng", "\0"]),
)


@settings(max_examples=150, deadline=None)
@given(cells=st.lists(st.tuples(_CELLS, _CELLS, _CELLS, _CELLS), min_size=1, max_size=4))  # test, GPU, units, commit
def test_any_touch_row_reads_as_records_or_a_located_warning(cells: list[tuple[object, ...]]) -> None:
    """Whatever a `sqlite3` session wrote into the cells ci-tool reads (test id, GPU type, units, commit), the
    readers answer: a bad row is a warning naming its table and column, and its file is unrecorded."""
    with tempfile.TemporaryDirectory() as folder:
        path, warned = Path(folder) / "h.sqlite", []
        HistoryStore(path).close()
        db = sqlite3.connect(path, isolation_level=None)
        for row in cells:  # a bytes cell goes in as a text that is not UTF-8; a NULL in a NOT NULL column: no row
            test, gpu_type, units, commit = ("CAST(? AS TEXT)" if isinstance(cell, bytes) else "?" for cell in row)
            values = f"'a.py', {test}, {gpu_type}, {units}, 'S-1', {commit}, 'r1', 1.0"
            db.execute(f"INSERT OR IGNORE INTO touch_records VALUES ({values})", row)
        db.close()
        with HistoryStore(path, warn=warned.append) as store:
            found, bad = rows_of_files(store, ["a.py"])
            made_at = record_commits(store)
            recorded_tests(store, gpu_type="CPU")
    assert all(row.source == "a.py" and "\0" not in row.commit for row in found)
    assert all(not commit or commit.isalnum() for commits in made_at.values() for commit in commits)
    assert bad == ({"a.py"} if bad else set())
    assert all("table touch_records, " in warning and ", column " in warning for warning in warned)
