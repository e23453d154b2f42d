"""The order a stage runs its tests in: the likeliest to fail first, so a failing change shows a failure in a
stage's first minutes instead of its last. Pure: the history's failures and the change's touch records are
read at the edge (history/failures.py, run/likelihood.py) and arrive as a Likelihood.

    tier 1  failed recently     a first attempt failed in the window and stayed red (no rerun saved it)
    tier 2  flaky failure       every failure in the window passed on its rerun (a known flaky signature)
    tier 3  changed test file   the change edits or adds the test file (its new tests have no records yet)
    tier 4  touches the change  a touch record says the test ran a file the change changes
    then    the rest            in the list's order, as pytest collects it

The window is the RECENT_FAILURE_DAYS before the run, over every stage: a test id that failed on another
stage is as suspect here. A test of two tiers takes the higher one. Within a tier the suspects of one file
stay together, and run in pytest's collection order (run/order.py), so a module's fixtures are set up once
a tier, not once a test; the files go shortest first (the mean recorded duration of their suspects,
stages/durations.py), then by path: among files equally likely to fail, the short ones reach a failure
sooner. Only tests a line of the stage selects count (a line's path covers the id; its `-k`/`-m` filter is
not evaluated here, so the count is an upper bound); the priority names node ids, or a file when a whole
file failed (a collection error), and the pytest processes run what they select of them first. The
batches (the regular lines, each ISOLATION line) and every marker stay as they are: only the order inside
a process changes.
"""

from __future__ import annotations

import enum
import math
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ci_tool.change.narrowing import split_filters
from ci_tool.change.value import ChangeSet, is_test_file
from ci_tool.stages.durations import Durations, estimate_seconds
from ci_tool.testdb.check import covers
from ci_tool.testdb.lines import TestLine, file_of

RECENT_FAILURE_DAYS = 7  # a week of runs: last week's red tests are this week's suspects; older ones were fixed


class Tier(enum.IntEnum):
    """Why a test runs early; a lower tier runs first."""

    FAILED = 1
    FLAKY = 2
    CHANGED = 3
    TOUCHES = 4


@dataclass(frozen=True)
class RecentFailure:
    """A test whose first attempt failed in the window."""

    test_id: str
    stayed_red: bool  # at least one of those failures was not saved by a rerun


@dataclass(frozen=True)
class Likelihood:
    """What the order is decided from: the window's failures and the tests touching the change."""

    failures: tuple[RecentFailure, ...] = ()
    touching: frozenset[str] = frozenset()  # tests whose touch records ran a changed file
    changed_tests: frozenset[str] = frozenset()  # test files the change edits or adds


@dataclass(frozen=True)
class Ranked:
    test_id: str
    tier: Tier


@dataclass(frozen=True)
class Priority:
    """The tests a stage runs first, in order; `enabled` False: the order was left as the list has it."""

    first: tuple[Ranked, ...] = ()
    enabled: bool = True

    @property
    def test_ids(self) -> tuple[str, ...]:
        return tuple(ranked.test_id for ranked in self.first)

    def count(self, tier: Tier) -> int:
        return sum(1 for ranked in self.first if ranked.tier is tier)

    @property
    def summary(self) -> str:
        """`order: 3 recent failures, 5 touching the change first`: one line for a plan's reader."""
        if not self.enabled:
            return "order: the list's order (reordering is off)"
        parts = [
            _counted(self.count(Tier.FAILED), "recent failure"),
            _counted(self.count(Tier.FLAKY), "flaky failure"),
            _counted(self.count(Tier.CHANGED), "changed test file"),
            f"{self.count(Tier.TOUCHES)} touching the change" if self.count(Tier.TOUCHES) else "",
        ]
        shown = ", ".join(part for part in parts if part)
        if not shown:
            return (f"order: the list's order (no test of it failed in {RECENT_FAILURE_DAYS} days, is a changed "
                    "test file or touches the change)")  # fmt: skip
        return f"order: {shown} first"


LIST_ORDER = Priority(enabled=False)  # a plan not ordered by likelihood


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}" if count else ""


def touching_tests(changes: ChangeSet | None) -> frozenset[str]:
    """The tests touching the changed code, as the change's touch records say (file -> tests that ran it)."""
    if changes is None:
        return frozenset()
    return frozenset(test for tests in changes.touched_by.values() for test in tests)


def changed_test_files(changes: ChangeSet | None) -> frozenset[str]:
    """The test files (`test_*.py`, `*_test.py`: pytest's default names) the change edits or adds."""
    if changes is None:
        return frozenset()
    return frozenset(path for path in changes.files if path not in changes.deleted and is_test_file(path))


def tiers(likelihood: Likelihood) -> dict[str, Tier]:
    """Each suspect test's tier (the higher of two)."""
    found = dict.fromkeys(likelihood.touching, Tier.TOUCHES)
    found.update(dict.fromkeys(likelihood.changed_tests, Tier.CHANGED))
    for failure in likelihood.failures:
        tier = Tier.FAILED if failure.stayed_red else Tier.FLAKY
        found[failure.test_id] = min(tier, found.get(failure.test_id, tier))
    return found


def prioritize(likelihood: Likelihood, lines: Sequence[TestLine], durations: Durations) -> Priority:
    """The tests of `lines` to run first (see the module docstring)."""
    selectors = [split_filters(line.test_id)[0] for line in lines]
    suspects = {
        test_id: tier
        for test_id, tier in tiers(likelihood).items()
        if any(covers(selector, test_id) or covers(test_id, selector) for selector in selectors)
    }
    seconds = _seconds(suspects, durations)
    groups: dict[tuple[Tier, str], list[str]] = defaultdict(list)
    for test_id in sorted(suspects):
        groups[(suspects[test_id], file_of(test_id))].append(test_id)

    def shortest_first(group: tuple[Tier, str]) -> tuple[Tier, float, str]:
        found = groups[group]
        return group[0], math.fsum(seconds[test_id] for test_id in found) / len(found), group[1]

    order = sorted(groups, key=shortest_first)
    return Priority(tuple(Ranked(test_id, tier) for tier, path in order for test_id in groups[(tier, path)]))


def _seconds(test_ids: Collection[str], durations: Durations) -> Mapping[str, float]:
    return estimate_seconds(sorted(test_ids), durations).seconds if test_ids else {}
