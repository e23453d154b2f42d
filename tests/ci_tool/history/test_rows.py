"""rows.py: any value in any column of a stored row gives a typed record or our BadRowError, never another
exception; and a transaction a signal interrupts leaves nothing behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.history import rows
from ci_tool.history.backend import Writer
from ci_tool.history.locator import History, PostgresUrl
from ci_tool.history.store import HistoryStore

ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20), st.binary(max_size=8),
    st.sampled_from(["passed", "running", "{}", '{"a": 1}', "[]", "NaN", "1e300"]),
)  # fmt: skip
GOOD = {
    rows.RUN_COLUMNS: ("r", "/bot run", "passed", 1.0, 2.0, "host", "{}", "", "", ""),
    rows.STAGE_COLUMNS: ("r", "S-1", "failed", "", 1.0, 2.0, 1, 1, 0, "", "{}"),
    rows.TEST_COLUMNS: ("a.py::t", "failed", 1.0, "passed", None, "", "", "", ""),
}
PARSERS = {
    rows.RUN_COLUMNS: rows.run_record,
    rows.STAGE_COLUMNS: rows.stage_record,
    rows.TEST_COLUMNS: lambda store, row: rows.test_record(store, row, run_id="r", stage="S-1"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with HistoryStore(tmp_path_factory.mktemp("rows") / "h.sqlite") as opened:
        yield opened


@pytest.mark.parametrize("columns", list(GOOD), ids=["runs", "stages", "test_results"])
def test_a_good_row_reads(store: HistoryStore, columns: str) -> None:
    assert PARSERS[columns](store, GOOD[columns]) is not None


@settings(max_examples=400, deadline=None)
@given(table=st.sampled_from(list(GOOD)), data=st.data())
def test_any_value_in_any_column_is_a_record_or_our_error(table: str, data: st.DataObject) -> None:
    row = list(GOOD[table])
    for index in data.draw(st.sets(st.integers(0, len(row) - 1), min_size=1, max_size=3)):
        row[index] = data.draw(ANY_VALUE)
    try:
        PARSERS[table](PATH_ONLY, tuple(row))
    except rows.BadRowError as error:
        assert str(error).startswith("h.sqlite: table ") and "\n" not in str(error)


class _PathOnly:
    """What the parsers read of a store: its path (a tiny fake: no file is needed to parse a row)."""

    path = Path("h.sqlite")


PATH_ONLY: Any = _PathOnly()


def test_a_signal_inside_a_transaction_rolls_it_back(history_at: History) -> None:
    def interrupted(db: Writer) -> None:
        db.execute("INSERT INTO runs (run_id, command, state, started_at) VALUES ('r', 'x', 'running', 1.0)")
        raise KeyboardInterrupt  # what SIGTERM raises (ci_tool.interrupts)

    with HistoryStore(history_at) as store:
        with pytest.raises(KeyboardInterrupt):
            store.write(interrupted)
        assert store.rows("SELECT run_id FROM runs") == []
        assert isinstance(history_at, PostgresUrl) or not store.db.in_transaction
