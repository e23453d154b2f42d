"""A waive's issue link and expiry: parsed from its reason, checked by `testdb check`."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ci_tool.errors import TestDbError, Where
from ci_tool.testdb.waive_terms import WaiveTerms, expired_waives, parse_terms, unlinked_waives
from ci_tool.testdb.waives import parse_waive_line, parse_waives, read_waives
from tests.ci_tool.testdb.corpus import WAIVES, needs_corpus

HERE = Where("waives.txt", 4, 1)
JAN_31 = datetime.date(2027, 1, 31)

TERMS = [
    ("none", None, WaiveTerms()),
    ("free text", "Disable for Blackwell", WaiveTerms()),
    ("nvbugs link", "https://nvbugs/5346443", WaiveTerms("https://nvbugs/5346443")),
    (
        "link and expiry",
        "https://github.com/o/r/issues/123 until 2027-01-31",
        WaiveTerms("https://github.com/o/r/issues/123", JAN_31),
    ),
    ("expiry alone", "flaky until 2027-01-31", WaiveTerms(None, JAN_31)),
    ("link inside text", "see http://bugs/7, flaky", WaiveTerms("http://bugs/7")),
    ("until as a word", "skip until the fix lands", WaiveTerms()),
    ("until a version", "broken until 5.0", WaiveTerms()),
    ("until not at the end", "until 2027-01-31 then look again", WaiveTerms()),
]


@pytest.mark.parametrize(("reason", "expected"), [t[1:] for t in TERMS], ids=[t[0] for t in TERMS])
def test_terms(reason: str | None, expected: WaiveTerms) -> None:
    assert parse_terms(reason) == expected


@pytest.mark.parametrize(
    ("line", "found", "column"),
    [
        ("a.py::t SKIP (https://x/1 until 2027-02-30)", "2027-02-30", 33),
        ("a.py::t SKIP (flaky until 31/01/2027)", "31/01/2027", 27),
        ("full:A10/a.py::t SKIP (until 2027-1-31)", "2027-1-31", 30),
    ],
    ids=["no such day", "day first", "one digit month"],
)
def test_a_date_that_is_not_one_is_the_lines_error(line: str, found: str, column: int) -> None:
    with pytest.raises(TestDbError) as raised:
        parse_waive_line(line, HERE)
    assert str(raised.value) == (
        f"waives.txt:4:{column}: expected `until YYYY-MM-DD` with a real day, found {found!r} "
        "Hint: write the last day the waive holds as year-month-day, e.g. until 2027-01-31"
    )


def test_the_waive_holds_through_its_day_and_expires_after() -> None:
    waives, _ = parse_waives("a.py::t SKIP (https://x/1 until 2027-01-31)\nb.py::t SKIP (https://x/2)\n", "w.txt")
    assert expired_waives(waives, JAN_31) == []
    (error,) = expired_waives(waives, datetime.date(2027, 2, 2))
    assert str(error) == (
        "w.txt:1:1: expected an unexpired waive, found 'a.py::t' waived until 2027-01-31 (today is 2027-02-02, "
        "2 days later) Hint: run `ci-tool waive verify a.py::t` and delete the line once it passes, or, if the "
        "issue is still open, write a later `until` day"
    )


def test_waives_without_a_link_are_named_with_what_they_hold() -> None:
    text = "a.py::t SKIP (https://x/1)\nb.py::t SKIP (flaky)\nc.py::t SKIP # https://x/3\n"
    waives, _ = parse_waives(text, "w.txt")
    assert [str(e) for e in unlinked_waives(waives)] == [
        "w.txt:2:1: expected a waive reason with an issue link, found 'b.py::t' with reason 'flaky' Hint: write "
        "the line as `<test id> SKIP (https://your-tracker/issues/N until YYYY-MM-DD)`",
        "w.txt:3:1: expected a waive reason with an issue link, found 'c.py::t' with no reason Hint: write "
        "the line as `<test id> SKIP (https://your-tracker/issues/N until YYYY-MM-DD)`",
    ]


@needs_corpus(WAIVES)
def test_tensorrt_llms_waives_load_unchanged_and_never_expire() -> None:
    waives, problems = read_waives(WAIVES)
    assert (len(waives), problems) == (464, [])
    assert expired_waives(waives, datetime.date(9999, 12, 31)) == []
    assert sum(1 for w in waives if w.terms.issue) == 403  # the `SKIP (https://nvbugs/N)` lines


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_any_reason_gives_terms_or_our_error(reason: str) -> None:
    try:
        terms = parse_terms(reason, HERE, line=reason)
    except TestDbError:
        return
    assert terms.issue is None or terms.issue in reason
