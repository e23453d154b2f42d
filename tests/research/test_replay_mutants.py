"""The replay bench's mutation operators (research/replay/replay_mutants.py): which edits each makes in one
function's own lines, and which it leaves out as not compiling or equivalent by construction."""

from __future__ import annotations

import random

import pytest
from replay_mutants import Mutant, Operator, mutants, pick

POOL = '''class Pool:
    def take(self, n, free):
        """Take n blocks."""
        if n <= free:
            return slice(free, n)
        return None

    def span(self, count):
        return [index for index in range(1, count)]


def outer(a):
    def inner(b):
        return b is not None
    return inner(a) or max(a, 0)


def alone(x):
    y = x; z = 2
    pass
    return f(x, x)
'''


def labels(source: str, unit: str) -> list[str]:
    return sorted(mutant.label for listed in mutants("pool.py", source, unit).values() for mutant in listed)


CASES = [
    ("a method: its comparison, a call's arguments, its statements; not the docstring or the closing return None",
     "Pool.take", [
         "pool.py:4 Pool.take: dropped statement (`if n <= free: return slice(free, n)` -> `pass`)",
         "pool.py:4 Pool.take: flipped comparison (`<=` -> `>`)",
         "pool.py:5 Pool.take: dropped statement (`return slice(free, n)` -> `pass`)",
         "pool.py:5 Pool.take: swapped arguments (`free, n` -> `n, free`)",
     ]),
    ("a range: its literal start plus one, its stop minus one", "Pool.span", [
        "pool.py:9 Pool.span: dropped statement (`return [index for index in range(1, count)]` -> `pass`)",
        "pool.py:9 Pool.span: off-by-one (`1` -> `2`)",
        "pool.py:9 Pool.span: off-by-one (`count` -> `(count) - 1`)",
        "pool.py:9 Pool.span: swapped arguments (`1, count` -> `count, 1`)",
    ]),
    ("an enclosing function: not its nested def's lines, not max's symmetric arguments", "outer", [
        "pool.py:15 outer: dropped statement (`return inner(a) or max(a, 0)` -> `pass`)",
        "pool.py:15 outer: off-by-one (`0` -> `1`)",
    ]),
    ("a nested def on its own", "outer.inner", [
        "pool.py:14 outer.inner: dropped statement (`return b is not None` -> `pass`)",
        "pool.py:14 outer.inner: flipped comparison (`is not` -> `is`)",
    ]),
    ("statements sharing a line, a pass and equal arguments are left alone", "alone", [
        "pool.py:19 alone: off-by-one (`2` -> `3`)",
        "pool.py:21 alone: dropped statement (`return f(x, x)` -> `pass`)",
    ]),
    ("a unit the text does not have", "Pool.missing", []),
]  # fmt: skip


@pytest.mark.parametrize(("unit", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_mutants_of_a_function(unit: str, expected: list[str]) -> None:
    assert labels(POOL, unit) == expected


def test_a_dropped_statement_keeps_every_other_line_where_it_was() -> None:
    source = "def f(x):\n    total = (x +\n             1)\n    return total\n"
    (dropped,) = [m for m in mutants("a.py", source, "f")[Operator.DROP_STATEMENT] if m.line == 2]
    assert dropped.text == "def f(x):\n    pass\n\n    return total\n"


def test_a_text_that_does_not_parse_has_no_mutants() -> None:
    assert mutants("a.py", "def f(:\n", "f") == {}


def mutant(operator: Operator, line: int) -> Mutant:
    return Mutant("a.py", "f", operator, line, "x", "y", "")


def test_pick_takes_each_operator_in_turn_before_a_second_of_one() -> None:
    found = {Operator.DROP_STATEMENT: [mutant(Operator.DROP_STATEMENT, n) for n in (1, 2, 3)],
             Operator.OFF_BY_ONE: [mutant(Operator.OFF_BY_ONE, 4)]}  # fmt: skip
    assert sorted(m.operator.value for m in pick(found, 2, random.Random(0))) == ["dropped statement", "off-by-one"]
