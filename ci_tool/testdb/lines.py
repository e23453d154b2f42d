"""The test-line grammar shared by test-db lists, rendered lists and waives.

    line     := test_id [markers] [comment]
    test_id  := node id | file | folder, optionally followed by `-k "expr"` / `-m "expr"`
    markers  := marker ((" " | ",") marker)*
    marker   := "XFAIL" [reason] | "SKIP" [reason] | "UNSTABLE" [reason]
              | "TIMEOUT" " "? "(" minutes ")" | "ISOLATION"
    reason   := "(" text ")"
    comment  := "#" text            (outside parentheses, at the start or after a blank)

Examples: `a.py::t TIMEOUT (90)`, `a.py::t TIMEOUT(60) ISOLATION`, `dir -k "x" SKIP (https://bug/1)`.
The first marker word that stands alone after the id ends the id. A line is one line of visible text: a
newline, NUL or other control or invisible character (a tab aside) is an error, never a second entry.
`minutes` is ASCII digits, 1 to MAX_TIMEOUT_MINUTES.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from ci_tool.errors import TestDbError, Where, shown
from ci_tool.text_file import unprintable


class LineStatus(enum.StrEnum):
    """What a status marker does to the tests a line selects (the value is the marker as written)."""

    XFAIL = "XFAIL"  # expected to fail: a failure is not red
    SKIP = "SKIP"  # not run
    UNSTABLE = "UNSTABLE"  # runs; its failure is reported apart


STATUS_MARKERS = tuple(status.value for status in LineStatus)
MAX_TIMEOUT_MINUTES = 7 * 24 * 60  # a week: a longer TIMEOUT is a typo (pytest-timeout gets N * 60 seconds)
MARKERS = (*STATUS_MARKERS, "TIMEOUT", "ISOLATION")

# A marker word standing alone: preceded by a blank or comma, followed by end, blank, comma or "(".
_MARKER_START = re.compile(r"(?:(?<=\s)|(?<=,))(" + "|".join(MARKERS) + r")(?=$|[\s,(])")
_REASON = re.compile(r"\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")  # one level of nested parentheses allowed
_SEPARATOR = re.compile(r"[\s,]*")


@dataclass(frozen=True)
class TestLine:
    """One parsed test line. `raw` is the line as written, minus any comment."""

    __test__ = False  # not a pytest test class despite the name

    raw: str
    test_id: str
    timeout_minutes: int | None = None
    isolation: bool = False
    status: LineStatus | None = None
    reason: str | None = None  # the text in parentheses after the status marker

    @property
    def path(self) -> str:
        """The file or folder part of the id (before `::`, `[` and any `-k`/`-m` filter)."""
        head = self.test_id.split(" ", 1)[0]
        return head.split("::", 1)[0]


def file_of(test_id: str) -> str:
    """The file (or folder) part of a node id: `tests/a.py::test_x[p]` -> `tests/a.py`."""
    return test_id.split("::", 1)[0]


def strip_comment(text: str) -> str:
    """Drop a `#` comment that starts a line or follows a blank, unless it sits inside parentheses."""
    depth = 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == "#" and depth == 0 and (index == 0 or text[index - 1].isspace()):
            return text[:index].rstrip()
    return text.rstrip()


def parse_test_line(text: str, where: Where | None = None) -> TestLine:
    """Parse one test line; raise TestDbError (with `where`) when it is malformed."""
    character = unprintable(text)
    if character is not None:
        raise TestDbError(
            f"expected a test line of visible characters, found {character} in {shown(text)}",
            where=where,
            hint="a test line is one line of text: delete the character (or split the line into two entries)",
        )
    raw = strip_comment(text).strip()
    if not raw:
        raise TestDbError("expected a test id, found an empty line", where=where)
    match = _MARKER_START.search(" " + raw)  # the blank lets a marker at the very start count
    if match is None:
        return TestLine(raw=raw, test_id=raw)
    start = match.start() - 1
    end = start
    while end and (raw[end - 1].isspace() or raw[end - 1] == ","):  # a tab or other blank before a marker ends the id
        end -= 1
    test_id = raw[:end]
    if not test_id:
        raise TestDbError(f"expected a test id before {match.group(1)}, found {raw!r}", where=where)
    return _parse_markers(raw, test_id, start, where)


def _parse_markers(raw: str, test_id: str, position: int, where: Where | None) -> TestLine:
    timeout_minutes: int | None = None
    isolation = False
    status: LineStatus | None = None
    reason: str | None = None
    seen: set[str] = set()
    while position < len(raw):
        match = _MARKER_START.match(raw, position)
        if match is None:
            raise TestDbError(
                f"expected a marker ({', '.join(MARKERS)}) after the test id, found {raw[position:]!r}",
                where=where,
            )
        word = match.group(1)
        if word in seen:
            raise TestDbError(f"expected each marker once, found {word} twice in {raw!r}", where=where)
        seen.add(word)
        position = match.end()
        if word == "ISOLATION":
            isolation = True
        elif word == "TIMEOUT":
            timeout_minutes, position = _parse_timeout(raw, position, where)
        else:
            if status is not None:
                raise TestDbError(
                    f"expected at most one of {', '.join(STATUS_MARKERS)}, found {status} and {word} in {raw!r}",
                    where=where,
                )
            status = LineStatus(word)
            reason, position = _parse_reason(raw, word, position, where)
        position = _SEPARATOR.match(raw, position).end()  # type: ignore[union-attr]
    return TestLine(raw, test_id, timeout_minutes, isolation, status, reason)


def _parse_timeout(raw: str, position: int, where: Where | None) -> tuple[int, int]:
    match = _REASON.match(raw, position)
    digits = match.group(1).strip() if match else ""
    hint = "write e.g. TIMEOUT (90); the value is in minutes"
    if match is None or not (digits.isascii() and digits.isdigit()) or not digits.strip("0"):
        found = digits if match else raw[position:].strip() or "nothing"
        raise TestDbError(
            f"expected TIMEOUT (N) with N a positive whole number of minutes, found {shown(found)} in {shown(raw)}",
            where=where,
            hint=hint,
        )
    significant = digits.lstrip("0")
    if len(significant) > len(str(MAX_TIMEOUT_MINUTES)) or int(significant) > MAX_TIMEOUT_MINUTES:
        raise TestDbError(
            f"expected TIMEOUT (N) with N at most {MAX_TIMEOUT_MINUTES} minutes (a week), found {shown(digits)} "
            f"in {shown(raw)}",
            where=where,
            hint=hint,
        )
    return int(significant), match.end()


def _parse_reason(raw: str, word: str, position: int, where: Where | None) -> tuple[str | None, int]:
    match = _REASON.match(raw, position)
    if match:
        return match.group(1).strip(), match.end()
    rest = raw[position:].strip()
    next_marker = _MARKER_START.match(raw, _SEPARATOR.match(raw, position).end())  # type: ignore[union-attr]
    if not rest or next_marker:
        return None, position
    raise TestDbError(
        f"expected the text after {word} in parentheses, found {rest!r}",
        where=where,
        hint=f"forgot parentheses? write {word} ({rest})",
    )
