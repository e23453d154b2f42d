"""Waive lines proposed from measured flakiness. Pure: flake stats and the waives file's waives in, the
lines a person reviews out (commands/waive.py writes them as a diff; nothing is applied).

    line := "full:" GPU "/" test_id " SKIP (" (issue | "flaky") " until " day ")"
            "  # flake rate " rate ", " signature

One line per test and GPU type at or above the rate over at least `min_runs` runs, scoped to that GPU type
(where it was measured); one flaky run is a rate of 100 % and proves nothing, so a test with fewer runs is
set aside with how many more it needs.
A test some waive already covers on that GPU type is not proposed again; a test id no waive line can
hold (a blank inside its parameters, say) is set aside with why, never written as a broken line.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ci_tool.errors import TestDbError, Where
from ci_tool.history.flakiness import FlakeStats
from ci_tool.testdb.check import covers
from ci_tool.testdb.waives import Waive, parse_waive_line

FLAKY_REASON = "flaky"  # the reason's words when no issue is given


@dataclass(frozen=True)
class ProposedWaive:
    stats: FlakeStats
    line: str


@dataclass(frozen=True)
class Proposal:
    waives: tuple[ProposedWaive, ...]  # most GPU minutes lost first
    already_waived: tuple[FlakeStats, ...]
    below_rate: int  # flaky tests under the threshold
    unwaivable: tuple[tuple[FlakeStats, str], ...]  # with why no line can hold them
    too_few_runs: tuple[FlakeStats, ...] = ()  # at or above the rate, over fewer than min_runs runs


def propose_waives(
    stats: Sequence[FlakeStats],
    waives: Iterable[Waive],
    *,
    min_rate: float,
    min_runs: int,
    expires: datetime.date,
    issue: str | None = None,
) -> Proposal:
    """The waive lines for the flaky tests at or above `min_rate` over at least `min_runs` runs that no waive
    covers yet."""
    existing = list(waives)
    proposed: list[ProposedWaive] = []
    already: list[FlakeStats] = []
    unwaivable: list[tuple[FlakeStats, str]] = []
    too_few: list[FlakeStats] = []
    above = [s for s in stats if s.rate >= min_rate]
    for found in above:
        if any(w.applies_to(found.gpu) and covers(w.test_id, found.test_id) for w in existing):
            already.append(found)
            continue
        if found.runs < min_runs:
            too_few.append(found)
            continue
        line = waive_line(found, expires=expires, issue=issue)
        problem = _round_trip_problem(line, found)
        if problem is None:
            proposed.append(ProposedWaive(found, line))
        else:
            unwaivable.append((found, problem))
    return Proposal(tuple(proposed), tuple(already), len(stats) - len(above), tuple(unwaivable), tuple(too_few))


def waive_line(stats: FlakeStats, *, expires: datetime.date, issue: str | None) -> str:
    reason = f"{issue or FLAKY_REASON} until {expires.isoformat()}"
    comment = f"flake rate {stats.rate_text()}" + (f", {stats.signature}" if stats.signature else "")
    return f"full:{stats.gpu}/{stats.test_id} SKIP ({reason})  # " + "".join(c for c in comment if c.isprintable())


def _round_trip_problem(line: str, stats: FlakeStats) -> str | None:
    """Why the line would not waive exactly this test on this GPU type when read back, or None."""
    try:
        parsed = parse_waive_line(line, Where("<proposal>"))
    except TestDbError as error:
        return error.message
    if [(w.test_id, w.gpu) for w in parsed] != [(stats.test_id, stats.gpu)]:
        return "a waive line would read its id as " + ", ".join(repr(w.test_id) for w in parsed)
    return None
