"""What a waive's reason carries besides free text: the issue that tracks it and the day it expires.

    reason  := text                               SKIP (Disable for Blackwell)
             | [text] link [text]                 SKIP (https://nvbugs/5346443)
             | [text] "until" " " date            SKIP (https://github.com/o/r/issues/123 until 2027-01-31)
    link    := "http://" or "https://" and the non-blank characters after it (the first one counts)
    date    := YYYY-MM-DD, a real day; the waive holds through that day and has expired the day after

Both sit inside the reason's parentheses, so a reader that takes the reason as free text (TensorRT-LLM's
own parser) loads the line unchanged, and every existing line still means what it meant: no reason of
TensorRT-LLM's waives.txt ends in `until <date>`. A reason that ends in `until` and something shaped like a
date that is not one (`2027-02-30`, `31/01/2027`) is an error: a silently ignored expiry never expires.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from ci_tool.errors import TestDbError, Where

_LINK = re.compile(r"https?://\S+")
_UNTIL = re.compile(r"(?:^|\s)until\s+(\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4})$")
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
LINK_HINT = "write the line as `<test id> SKIP (https://your-tracker/issues/N until YYYY-MM-DD)`"


@dataclass(frozen=True)
class WaiveTerms:
    issue: str | None = None  # the first link in the reason
    expires: datetime.date | None = None  # the last day the waive holds


def parse_terms(reason: str | None, where: Where | None = None, *, line: str = "") -> WaiveTerms:
    """The issue link and expiry of a reason; `line` (the waive as written) places an error's column."""
    if not reason:
        return WaiveTerms()
    link = _LINK.search(reason)
    until = _UNTIL.search(reason)
    expires = None
    if until is not None:
        written = until.group(1)
        expires = _day(written)
        if expires is None:
            column = line.rfind(written) + 1 if where is not None and written in line else None
            raise TestDbError(
                f"expected `until YYYY-MM-DD` with a real day, found {written!r}",
                where=Where(where.file, where.line, column or where.col) if where is not None else None,
                hint="write the last day the waive holds as year-month-day, e.g. until 2027-01-31",
            )
    return WaiveTerms(_link_of(link) if link else None, expires)


def link_pieces(reason: str) -> list[tuple[str, bool]]:
    """The reason cut into (text, is_link) pieces, the links (http and https only) as parse_terms reads them:
    a report renders the pieces that are links as links, everything else as text."""
    pieces: list[tuple[str, bool]] = []
    at = 0
    for match in _LINK.finditer(reason):
        link = _link_of(match)
        pieces += [(reason[at : match.start()], False), (link, True)]
        at = match.start() + len(link)
    pieces.append((reason[at:], False))
    return [(piece, is_link) for piece, is_link in pieces if piece]


def _link_of(match: re.Match[str]) -> str:
    return match.group(0).rstrip(".,;")  # the sentence's punctuation after a link is not part of it


def _day(text: str) -> datetime.date | None:
    if not _ISO_DAY.fullmatch(text):
        return None
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        return None


class _Waive(Protocol):
    @property
    def test_id(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def where(self) -> Where: ...
    @property
    def terms(self) -> WaiveTerms: ...


def expired_waives(waives: Iterable[_Waive], today: datetime.date) -> list[TestDbError]:
    """Waives whose `until` day has passed: the test has been skipped longer than anyone agreed to."""
    findings = []
    for waive in waives:
        expires = waive.terms.expires
        if expires is not None and expires < today:
            days = (today - expires).days
            findings.append(
                TestDbError(
                    f"expected an unexpired waive, found {waive.test_id!r} waived until {expires} "
                    f"(today is {today}, {days} day{'s' if days != 1 else ''} later)",
                    where=waive.where,
                    hint=f"run `ci-tool waive verify {waive.test_id}` and delete the line once it passes, or, "
                    "if the issue is still open, write a later `until` day",
                )
            )
    return findings


def unlinked_waives(waives: Iterable[_Waive]) -> list[TestDbError]:
    """Waives whose reason names no issue: nobody is on the hook to ever lift them."""
    return [
        TestDbError(
            f"expected a waive reason with an issue link, found {waive.test_id!r} with "
            + (f"reason {waive.reason!r}" if waive.reason else "no reason"),
            where=waive.where,
            hint=LINK_HINT,
        )
        for waive in waives
        if waive.terms.issue is None
    ]
