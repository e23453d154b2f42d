"""Property: whatever a test line, a waives file or a list line holds (as far as the pytest plugin reads it: the
`-k`/`-m` selector and its compiled expressions), the reader gives a value or our error, never another exception."""

from __future__ import annotations

import contextlib

from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import CiToolError, TestDbError, Where
from ci_tool.run.plugin import _make_entry
from ci_tool.testdb.lines import MARKERS, MAX_TIMEOUT_MINUTES, TestLine, parse_test_line
from ci_tool.testdb.waives import parse_waives
from ci_tool.text_file import unprintable

# Pieces that reach every branch of the line grammar and of the selector: markers with odd minutes, reasons,
# filters with odd quoting and expressions, comments, hidden characters, digits that are not ASCII.
PIECES = [
    *MARKERS, "tests/a.py", "a.py::T::t[x-1]", "dir/", "full:A10/", "full:/", "(", ")", "(90)", "(0)", "(\u00b2)",
    "(\u0669\u0660)", f"({MAX_TIMEOUT_MINUTES})", f"({MAX_TIMEOUT_MINUTES + 1})", "(" + "9" * 5000 + ")",
    "(https://bug/1)", "(a (b) c)", "-k", "-m", '"x and not y"', '"a and"', '"(((x"', '"' + "(" * 1500 + "x" +
    ")" * 1500 + '"', '"not ' * 400 + 'x"', '"x(a=' + "9" * 5000 + ')"', '"', "'", "#", "# c", ",", " ", "\t",
    "\n", "\x00", "\r", "\x0c", "\x85", "\u2028", "\u200b", "\ufeff", "\ud800", "\\",
]  # fmt: skip
lines = st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=10).map(" ".join)


def _check_parsed(line: TestLine) -> None:
    assert line.test_id and unprintable(line.test_id) is None
    assert line.timeout_minutes is None or 1 <= line.timeout_minutes <= MAX_TIMEOUT_MINUTES


@settings(max_examples=1000, deadline=None)
@given(lines)
def test_any_line_parses_or_raises_our_error(text: str) -> None:
    try:
        line = parse_test_line(text, Where("list.txt", 1))
    except TestDbError as error:
        assert "\n" not in str(error)
        return
    _check_parsed(line)
    try:
        _make_entry(1, line, Where("list.txt", 1))  # what the plugin builds of a line: selector, expressions
    except CiToolError as error:
        assert "\n" not in str(error)


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_any_text_parses_or_raises_our_error(text: str) -> None:
    with contextlib.suppress(TestDbError):
        _check_parsed(parse_test_line(text))


@settings(max_examples=500, deadline=None)
@given(st.lists(lines, max_size=4).map("\n".join))
def test_any_waives_file_gives_waives_and_our_errors(text: str) -> None:
    waives, problems = parse_waives(text, "waives.txt")
    assert all(isinstance(problem, TestDbError) for problem in problems)
    assert all(waive.test_id and unprintable(waive.test_id) is None for waive in waives)
