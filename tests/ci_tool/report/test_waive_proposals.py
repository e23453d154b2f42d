"""Waive lines proposed from measured flakiness: threshold, lines that read back as themselves, no
second waive for a waived test."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from ci_tool.errors import Where
from ci_tool.report.waive_proposals import propose_waives, waive_line
from ci_tool.testdb.waives import Waive, parse_waive_line
from tests.ci_tool.history.planted import PLANTED_STATS

FEB_9 = datetime.date(2027, 2, 9)
PLANTED = PLANTED_STATS
RARE = dataclasses.replace(PLANTED, test_id="b.py::test_rare", runs=20, failures=1)


def waives(*lines: str) -> list[Waive]:
    return [waive for number, line in enumerate(lines, 1) for waive in parse_waive_line(line, Where("w.txt", number))]


def test_a_line_carries_the_rate_the_signature_and_the_expiry() -> None:
    assert waive_line(PLANTED, expires=FEB_9, issue=None) == (
        "full:A10/a.py::test_planted SKIP (flaky until 2027-02-09)  # flake rate 33% (2 of 6 runs on A10), "
        "AssertionError: planted flake on run <n>"
    )
    line = waive_line(PLANTED, expires=FEB_9, issue="https://github.com/o/r/issues/7")
    (waive,) = parse_waive_line(line, Where("w.txt", 1))
    assert (waive.test_id, waive.gpu, waive.terms.issue, waive.terms.expires) == (
        "a.py::test_planted", "A10", "https://github.com/o/r/issues/7", FEB_9
    )  # fmt: skip


def test_only_tests_at_or_above_the_rate_are_proposed() -> None:
    proposal = propose_waives([PLANTED, RARE], [], min_rate=1 / 3, min_runs=5, expires=FEB_9)
    assert ([p.stats for p in proposal.waives], proposal.below_rate) == ([PLANTED], 1)


@pytest.mark.parametrize(
    "line",
    [
        "a.py::test_planted SKIP (https://bugs/1)",
        "full:A10/a.py::test_planted SKIP (https://bugs/1)",
        "full:A10/a.py SKIP (the whole file)",
    ],
    ids=["everywhere", "on its gpu", "its file"],
)
def test_a_waived_test_is_not_proposed_twice(line: str) -> None:
    proposal = propose_waives([PLANTED], waives(line), min_rate=0.1, min_runs=5, expires=FEB_9)
    assert (proposal.waives, proposal.already_waived) == ((), (PLANTED,))


def test_a_waive_of_another_gpu_type_does_not_count() -> None:
    other = waives("full:H100/a.py::test_planted SKIP (x)")
    proposal = propose_waives([PLANTED], other, min_rate=0.1, min_runs=5, expires=FEB_9)
    assert [p.stats for p in proposal.waives] == [PLANTED]


def test_an_id_no_line_can_hold_is_set_aside_with_why() -> None:
    spaced = dataclasses.replace(PLANTED, test_id="a.py::test_p[a b]")
    proposal = propose_waives([spaced], [], min_rate=0.1, min_runs=5, expires=FEB_9)
    assert (proposal.waives, proposal.unwaivable) == (
        (),
        ((spaced, "a waive line would read its id as 'a.py::test_p[a', 'b]'"),),
    )


def test_a_test_with_fewer_runs_than_the_minimum_is_set_aside() -> None:
    once = dataclasses.replace(PLANTED, test_id="c.py::test_once", runs=1, failures=1, passed_on_rerun=0)
    proposal = propose_waives([PLANTED, once], [], min_rate=0.1, min_runs=5, expires=FEB_9)
    assert ([p.stats for p in proposal.waives], proposal.too_few_runs, proposal.below_rate) == ([PLANTED], (once,), 0)
    assert propose_waives([once], [], min_rate=0.1, min_runs=1, expires=FEB_9).waives[0].stats == once
