"""Rows read back from the history become typed values here, and only here: every column is checked for
its type and range before a reader sees it, because the file is anyone's to edit (a `sqlite3` session, a
script, another tool) and SQLite's column types are advisory (text fits in a REAL column).

    text          a str; a key column also non-empty
    count         an int in [0, MAX_COUNT]
    seconds       a finite int or float in [0, MAX_SECONDS]: a duration
    timestamp     a finite int or float in [0, MAX_TIMESTAMP]: seconds since the epoch
    number        a finite int or float (perf values, baselines, thresholds)
    commit        '' (made on an uncommitted edit) or a git object name: 4 to 64 lowercase hex digits
    vocabulary    a value of one of ci-tool's enums (run states, stage states, outcomes, verdicts)
    details       a JSON object (the `details_json` columns)

A bad column is a BadRowError, one line: `FILE: table runs, run id 'X', column started_at: expected a
finite timestamp (seconds since the epoch), found 1e+300` and a hint. `read` decides per reader what a
bad row does: a reader of one named run (a report, a dispatch record) raises, since what it shows would
be wrong; a reader that sums over many runs (durations, slowest, flaky, the dashboard's lists) skips the
row and warns through the store (`HistoryStore.warn`), since the rest of the history still answers.

Values arrive as Python's own types (str, int, float, None), so any DB-API driver's rows fit; a SQLite text
cell that is not UTF-8 arrives as bytes (sqlite_backend.py), which no text check takes.

Rows are checked here, not through typed_json: they come from a database, not JSON text, as tuples of cells
by column, and an error names the table, the row's key and the column rather than a JSON path.
"""

from __future__ import annotations

import enum
import functools
import json
import math
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ci_tool.errors import HistoryError, Where
from ci_tool.history.backend import StoreView
from ci_tool.history.records import RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import RunState, StageState, TestOutcome

MAX_SECONDS = 10 * 365 * 86_400.0  # no test or stage takes ten years: a larger duration was not measured
MAX_COUNT = 2**63 - 1  # what an SQL INTEGER (SQLite's, PostgreSQL's BIGINT) holds
MAX_TIMESTAMP = 32_503_680_000.0  # the year 3000: later "times" were not written by a clock
COUNT_EXPECTED = f"a count (an integer from 0 to {MAX_COUNT})"
COMMIT_EXPECTED = "a commit (4 to 64 lowercase hex digits) or '' (an uncommitted edit)"
_COMMIT = re.compile(r"[0-9a-f]{4,64}")
_JOIN_ALIASES = {"r": "runs", "s": "stages", "t": "test_results"}  # how the readers' joins name the tables
E = TypeVar("E", bound=enum.Enum)
T = TypeVar("T")


class BadRowError(HistoryError):
    """A history row whose column holds what ci-tool never writes there."""


@dataclass(frozen=True)
class RowView:
    """One raw row of `table`, its columns by name, with the key that names it in messages."""

    path: str
    table: str
    columns: Sequence[str]
    values: Sequence[Any]
    key: str = ""  # `run id 'X', stage 'S'`; set by `keyed`

    def raw(self, column: str) -> Any:
        return self.values[_positions(tuple(self.columns))[column]]

    def bad(self, column: str, expected: str) -> BadRowError:
        found = self.raw(column)
        shown = repr(found) if not isinstance(found, str) or len(found) <= 80 else repr(found[:80]) + "..."
        alias, _, name = column.rpartition(".")  # `r.started_at` of a join is column started_at of table runs
        table = _JOIN_ALIASES.get(alias, self.table)
        place = ", ".join(part for part in (f"table {table}", self.key, f"column {name}") if part)
        aside = shlex.join(["mv", self.path, f"{self.path}.damaged"])
        return BadRowError(
            f"{place}: expected {expected}, found {shown}",
            where=Where(self.path),
            hint=f"the history was changed outside ci-tool: fix or delete that row, or keep the file aside "
            f"(`{aside}`) and ci-tool starts a new history there",
        )

    def keyed(self, *known: str, **names: str) -> RowView:
        """This row named by its key columns (`run_id="run id"`), each checked as a non-empty text, after
        the `known` parts of its key (those the query asked for)."""
        key = ", ".join(known)
        for column, words in names.items():  # a bad key column is named by the parts of the key before it
            part = f"{words} {RowView(self.path, self.table, self.columns, self.values, key).key_text(column)!r}"
            key = f"{key}, {part}" if key else part
        return RowView(self.path, self.table, self.columns, self.values, key)  # one copy a row: readers make many

    def key_text(self, column: str) -> str:
        value = self.raw(column)
        if not isinstance(value, str) or not value:
            raise self.bad(column, "a non-empty text (a key)")
        return value

    def text(self, column: str) -> str:
        value = self.raw(column)
        if not isinstance(value, str):
            raise self.bad(column, "a text")
        return value

    def commit(self, column: str) -> str:
        """A commit's object name, or '' (see the module docstring): what reaches git as a revision is never
        a NUL, an option or a ref name."""
        value = self.raw(column)
        if not isinstance(value, str) or not (value == "" or _COMMIT.fullmatch(value)):
            raise self.bad(column, COMMIT_EXPECTED)
        return value

    def optional_text(self, column: str) -> str | None:
        return None if self.raw(column) is None else self.text(column)

    def count(self, column: str) -> int:
        value = self.raw(column)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
            raise self.bad(column, COUNT_EXPECTED)
        return value

    def flag(self, column: str) -> bool:
        value = self.raw(column)
        if value not in (0, 1) or isinstance(value, float):
            raise self.bad(column, "0 or 1")
        return bool(value)

    def number(self, column: str) -> float:
        value = self.raw(column)
        if not _is_number(value) or not math.isfinite(value):
            raise self.bad(column, "a finite number")
        return float(value)

    def optional_number(self, column: str) -> float | None:
        return None if self.raw(column) is None else self.number(column)

    def seconds(self, column: str) -> float:
        return self._within(column, MAX_SECONDS, "a finite number of seconds (a duration)")

    def timestamp(self, column: str) -> float:
        return self._within(column, MAX_TIMESTAMP, "a finite timestamp (seconds since the epoch)")

    def optional_timestamp(self, column: str) -> float | None:
        return None if self.raw(column) is None else self.timestamp(column)

    def _within(self, column: str, most: float, expected: str) -> float:
        value = self.raw(column)
        if not _is_number(value) or not 0 <= value <= most:  # NaN fails both comparisons
            raise self.bad(column, f"{expected} from 0 to {most:g}")
        return float(value)

    def vocabulary(self, column: str, kind: type[E]) -> E:
        value = self.raw(column)
        try:
            return kind(value)
        except ValueError:
            raise self.bad(column, f"a {kind.__name__} ({', '.join(str(v.value) for v in kind)})") from None

    def optional_vocabulary(self, column: str, kind: type[E]) -> E | None:
        return None if self.raw(column) is None else self.vocabulary(column, kind)

    def details(self, column: str) -> dict[str, object]:
        value = self.raw(column)
        try:
            details = json.loads(value) if isinstance(value, str) else None
        except (ValueError, RecursionError):
            details = None
        if not isinstance(details, dict):
            raise self.bad(column, "a JSON object of details")
        return details


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def view(store: StoreView, table: str, columns: str, row: Sequence[Any]) -> RowView:
    """A row of `SELECT <columns> FROM <table>` as a RowView."""
    return RowView(str(store.path), table, _names(columns), row)


@functools.lru_cache(maxsize=256)
def _names(columns: str) -> tuple[str, ...]:
    """The column names of a SELECT list (a reader's constant: parsed once, not once a row)."""
    return tuple(name.strip() for name in columns.split(","))


@functools.lru_cache(maxsize=256)
def _positions(columns: tuple[str, ...]) -> dict[str, int]:
    """Each column's place in the row (the first, as `tuple.index` finds it)."""
    return {name: index for index, name in reversed(list(enumerate(columns)))}


def read(
    store: StoreView, rows: Sequence[Sequence[Any]], parse: Callable[[Sequence[Any]], T], *, skip: bool
) -> list[T]:
    """`parse` of each row; a bad row raises, or (`skip`) is left out and heard by `store.warn` (the first
    in full, then how many more: one bad run spoils each of its test rows a join reads)."""
    found, bad = [], []
    for row in rows:
        try:
            found.append(parse(row))
        except BadRowError as error:
            if not skip:
                raise
            bad.append(error)
    if bad:
        more = f", and {len(bad) - 1} more bad row{'s' if len(bad) > 2 else ''} of that read" if len(bad) > 1 else ""
        store.warn(f"{bad[0]}; the row is left out{more}")
    return found


# -- the run tables ---------------------------------------------------------------------------------

RUN_COLUMNS = "run_id, command, state, started_at, finished_at, host, details_json, code_commit, code_diff, scope"
STAGE_COLUMNS = (
    "run_id, name, state, reason, started_at, duration_seconds, passed, failed, skipped, results_dir, details_json"
)
TEST_COLUMNS = "test_id, outcome, duration_seconds, rerun_outcome, waive_reason, kind, message, signature, output_head"


def run_record(store: StoreView, row: Sequence[Any]) -> RunRecord:
    """A row of RUN_COLUMNS."""
    r = view(store, "runs", RUN_COLUMNS, row).keyed(run_id="run id")
    return RunRecord(
        r.key_text("run_id"), r.text("command"), r.vocabulary("state", RunState), r.timestamp("started_at"),
        r.optional_timestamp("finished_at"), r.text("host"), r.details("details_json"), r.text("code_commit"),
        r.text("code_diff"), r.text("scope"),
    )  # fmt: skip


def stage_record(store: StoreView, row: Sequence[Any]) -> StageRecord:
    """A row of STAGE_COLUMNS."""
    r = view(store, "stages", STAGE_COLUMNS, row).keyed(run_id="run id", name="stage")
    return StageRecord(
        run_id=r.key_text("run_id"), name=r.key_text("name"), state=r.vocabulary("state", StageState),
        reason=r.text("reason"), started_at=r.optional_timestamp("started_at"),
        duration_seconds=r.seconds("duration_seconds"), passed=r.count("passed"), failed=r.count("failed"),
        skipped=r.count("skipped"), results_dir=r.text("results_dir"), details=r.details("details_json"),
    )  # fmt: skip


def test_record(store: StoreView, row: Sequence[Any], *, run_id: str, stage: str) -> TestRecord:
    """A row of TEST_COLUMNS of one stage of one run."""
    known = (f"run id {run_id!r}", f"stage {stage!r}")
    r = view(store, "test_results", TEST_COLUMNS, row).keyed(*known, test_id="test")
    return TestRecord(
        r.key_text("test_id"), r.vocabulary("outcome", TestOutcome), r.seconds("duration_seconds"),
        r.optional_vocabulary("rerun_outcome", TestOutcome), r.optional_text("waive_reason"), r.text("kind"),
        r.text("message"), r.text("signature"), r.text("output_head"),
    )  # fmt: skip
