"""The test-line grammar: (line, parsed) and (line, message) tables."""

from __future__ import annotations

import pytest

from ci_tool.errors import TestDbError
from ci_tool.testdb.lines import LineStatus, TestLine, parse_test_line, strip_comment

PARSED = [
    ("node id", "a.py::TestX::test_y[p-1]", TestLine("a.py::TestX::test_y[p-1]", "a.py::TestX::test_y[p-1]")),
    ("folder", "unittest/_torch/attention", TestLine("unittest/_torch/attention", "unittest/_torch/attention")),
    ("timeout", "a.py::t TIMEOUT (90)", TestLine("a.py::t TIMEOUT (90)", "a.py::t", timeout_minutes=90)),
    ("timeout without blank", "a.py::t TIMEOUT(60)", TestLine("a.py::t TIMEOUT(60)", "a.py::t", timeout_minutes=60)),
    ("isolation", "b.py ISOLATION", TestLine("b.py ISOLATION", "b.py", isolation=True)),
    (
        "timeout and isolation",
        "a.py::t TIMEOUT (120) ISOLATION",
        TestLine("a.py::t TIMEOUT (120) ISOLATION", "a.py::t", timeout_minutes=120, isolation=True),
    ),
    (
        "isolation comma other",
        "a.py::t ISOLATION,TIMEOUT (5)",
        TestLine("a.py::t ISOLATION,TIMEOUT (5)", "a.py::t", timeout_minutes=5, isolation=True),
    ),
    (
        "other comma isolation",
        "a.py::t TIMEOUT (5),ISOLATION",
        TestLine("a.py::t TIMEOUT (5),ISOLATION", "a.py::t", timeout_minutes=5, isolation=True),
    ),
    (
        "-k filter",
        'unittest/x.py -k "partition0"',
        TestLine('unittest/x.py -k "partition0"', 'unittest/x.py -k "partition0"'),
    ),
    (
        "-m filter with timeout",
        'unittest/x.py -m "not post_merge" TIMEOUT (90)',
        TestLine('unittest/x.py -m "not post_merge" TIMEOUT (90)', 'unittest/x.py -m "not post_merge"', 90),
    ),
    (
        "skip with url",
        "a.py::t SKIP (https://nvbugs/5841954)",
        TestLine("a.py::t SKIP (https://nvbugs/5841954)", "a.py::t", status=LineStatus.SKIP, reason="https://nvbugs/5841954"),
    ),
    ("skip without reason", "a.py::t SKIP", TestLine("a.py::t SKIP", "a.py::t", status=LineStatus.SKIP)),
    ("skip then comment", "a.py::t SKIP # (http://x)", TestLine("a.py::t SKIP", "a.py::t", status=LineStatus.SKIP)),
    (
        "reason with parentheses",
        "a.py SKIP (plugin (v2) fails)",
        TestLine("a.py SKIP (plugin (v2) fails)", "a.py", status=LineStatus.SKIP, reason="plugin (v2) fails"),
    ),
    (
        "reason keeps a hash",
        "a.py XFAIL (see http://x/#frag)",
        TestLine("a.py XFAIL (see http://x/#frag)", "a.py", status=LineStatus.XFAIL, reason="see http://x/#frag"),
    ),
    ("unstable", "a.py UNSTABLE ()", TestLine("a.py UNSTABLE ()", "a.py", status=LineStatus.UNSTABLE, reason="")),
    ("marker word inside an id", "a.py::test_SKIP_me", TestLine("a.py::test_SKIP_me", "a.py::test_SKIP_me")),
    ("longest timeout", "a.py TIMEOUT (10080)", TestLine("a.py TIMEOUT (10080)", "a.py", timeout_minutes=10080)),
    ("timeout with leading zeros", "a.py TIMEOUT (0090)", TestLine("a.py TIMEOUT (0090)", "a.py", timeout_minutes=90)),
    ("tab before a marker", "a.py\tISOLATION", TestLine("a.py\tISOLATION", "a.py", isolation=True)),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in PARSED], ids=[i for i, _, _ in PARSED])
def test_parses(text: str, expected: TestLine) -> None:
    assert parse_test_line(text) == expected


ERRORS = [
    ("empty", "   # only a comment", "expected a test id, found an empty line"),
    ("marker without id", "TIMEOUT (5)", "expected a test id before TIMEOUT, found 'TIMEOUT (5)'"),
    (
        "timeout not a number",
        "a.py TIMEOUT (soon)",
        "expected TIMEOUT (N) with N a positive whole number of minutes, found 'soon' in 'a.py TIMEOUT (soon)' "
        "Hint: write e.g. TIMEOUT (90); the value is in minutes",
    ),
    (
        "timeout without parentheses",
        "a.py TIMEOUT 90",
        "expected TIMEOUT (N) with N a positive whole number of minutes, found '90' in 'a.py TIMEOUT 90' "
        "Hint: write e.g. TIMEOUT (90); the value is in minutes",
    ),
    (
        "timeout negative",
        "a.py TIMEOUT (-5)",
        "expected TIMEOUT (N) with N a positive whole number of minutes, found '-5' in 'a.py TIMEOUT (-5)' "
        "Hint: write e.g. TIMEOUT (90); the value is in minutes",
    ),
    (
        "timeout superscript digit",
        "a.py TIMEOUT (²)",
        "expected TIMEOUT (N) with N a positive whole number of minutes, found '²' in 'a.py TIMEOUT (²)' "
        "Hint: write e.g. TIMEOUT (90); the value is in minutes",
    ),
    (
        "timeout arabic-indic digits",
        "a.py TIMEOUT (٩٠)",
        "expected TIMEOUT (N) with N a positive whole number of minutes, found '٩٠' in 'a.py TIMEOUT (٩٠)' "
        "Hint: write e.g. TIMEOUT (90); the value is in minutes",
    ),
    (
        "timeout zeros",
        "a.py TIMEOUT (000)",
        "expected TIMEOUT (N) with N a positive whole number of minutes, found '000' in 'a.py TIMEOUT (000)' "
        "Hint: write e.g. TIMEOUT (90); the value is in minutes",
    ),
    (
        "timeout over a week",
        "a.py TIMEOUT (10081)",
        "expected TIMEOUT (N) with N at most 10080 minutes (a week), found '10081' in 'a.py TIMEOUT (10081)' "
        "Hint: write e.g. TIMEOUT (90); the value is in minutes",
    ),
    (
        "timeout of thousands of digits",
        f"a.py TIMEOUT ({'9' * 5000})",
        "expected TIMEOUT (N) with N at most 10080 minutes (a week), found '" + "9" * 30 + "'... (5000 characters) "
        "in 'a.py TIMEOUT ("
        + "9" * 16
        + "'... (5015 characters) Hint: write e.g. TIMEOUT (90); the value is in minutes",
    ),
    (
        "newline",
        "a.py::t\nb.py::u",
        "expected a test line of visible characters, found U+000A in 'a.py::t\\nb.py::u' "
        "Hint: a test line is one line of text: delete the character (or split the line into two entries)",
    ),
    (
        "nul in a comment",
        "a.py # \x00",
        "expected a test line of visible characters, found U+0000 in 'a.py # \\x00' "
        "Hint: a test line is one line of text: delete the character (or split the line into two entries)",
    ),
    (
        "reason without parentheses",
        "a.py SKIP broken on A10",
        "expected the text after SKIP in parentheses, found 'broken on A10' "
        "Hint: forgot parentheses? write SKIP (broken on A10)",
    ),
    (
        "two statuses",
        "a.py SKIP (x) XFAIL (y)",
        "expected at most one of XFAIL, SKIP, UNSTABLE, found SKIP and XFAIL in 'a.py SKIP (x) XFAIL (y)'",
    ),
    (
        "marker twice",
        "a.py ISOLATION ISOLATION",
        "expected each marker once, found ISOLATION twice in 'a.py ISOLATION ISOLATION'",
    ),
    (
        "junk after markers",
        "a.py ISOLATION later",
        "expected a marker (XFAIL, SKIP, UNSTABLE, TIMEOUT, ISOLATION) after the test id, found 'later'",
    ),
]


@pytest.mark.parametrize(("text", "message"), [(t, m) for _, t, m in ERRORS], ids=[i for i, _, _ in ERRORS])
def test_rejects(text: str, message: str) -> None:
    with pytest.raises(TestDbError) as raised:
        parse_test_line(text)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("text", "kept"),
    [("a # b", "a"), ("# all", ""), ("a#b", "a#b"), ("a (x # y) # z", "a (x # y)")],
    ids=["after blank", "whole line", "inside a word", "inside parentheses"],
)
def test_strip_comment(text: str, kept: str) -> None:
    assert strip_comment(text) == kept


def test_path_is_the_file_part_of_the_id() -> None:
    assert parse_test_line('dir/a.py::T::t[x] -k "y"').path == "dir/a.py"
