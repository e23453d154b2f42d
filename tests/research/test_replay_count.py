"""The replay bench's counting (research/replay/replay_count.py, replay_select.covered): time to the first failure in
today's order and with a priority, which results a narrowed set's batches hold, and the misses per rule."""

from __future__ import annotations

import pytest
from replay_count import Cost, Fault, Replayed, misses, time_to_failure
from replay_mutants import Mutant, Operator
from replay_runs import Batch, TestResult
from replay_select import Rule, Slot, covered

from ci_tool.outcomes import TestOutcome

NOT_GPU = '-m "not gpu"'


def result(test_id: str, seconds: float, *, stage: str = "CPU-1", batch: int = 0, filters: str = NOT_GPU) -> TestResult:
    return TestResult(test_id, TestOutcome.PASSED, seconds, stage, filters, batch)


RUN = (
    result("t/a.py::one", 1.0),
    result("t/a.py::two", 2.0),
    result("t/b.py::three[x]", 4.0),
    result("t/c.py::four", 8.0, batch=1, filters=""),
    result("t/d.py::five", 0.5, stage="CPU-2"),
)
STAGES = {
    "CPU-1": [Slot(seconds=10.0), Slot(NOT_GPU, ("t/a.py", "t/b.py")), Slot("", ("t/c.py",))],
    "CPU-2": [Slot(NOT_GPU, ("t/d.py",))],
}
FIRST_FAILURES = [
    ("today: every line before the first failing test, a line not run with its predicted seconds",
     frozenset({"t/b.py::three[x]"}), {}, 17.0),
    ("the priority runs first in the stage's process", frozenset({"t/b.py::three[x]"}),
     {"CPU-1": ("t/b.py::three",)}, 4.0),
    ("one file's entries run as one group, in the order they ran", frozenset({"t/a.py::two"}),
     {"CPU-1": ("t/b.py::three", "t/a.py::two", "t/a.py::one")}, 7.0),
    ("stages run side by side: the earliest stage's failure", frozenset({"t/c.py::four", "t/d.py::five"}), {}, 0.5),
    ("no failing test: none", frozenset(), {}, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("failing", "priority", "seconds"), [c[1:] for c in FIRST_FAILURES], ids=[c[0] for c in FIRST_FAILURES]
)
def test_time_to_the_first_failure(
    failing: frozenset[str], priority: dict[str, tuple[str, ...]], seconds: float | None
) -> None:
    assert time_to_failure(RUN, failing, STAGES, priority) == seconds


COVERED = [
    ("a node id without its parameters selects each parameter set", (Batch("CPU-1", ("t/b.py::three",), NOT_GPU),),
     ["t/b.py::three[x]"]),
    ("a file selects its tests; another filter's batch selects nothing", (Batch("CPU-1", ("t/a.py",), NOT_GPU),
     Batch("CPU-1", ("t/d.py",), "")), ["t/a.py::one", "t/a.py::two"]),
]  # fmt: skip


@pytest.mark.parametrize(("batches", "expected"), [c[1:] for c in COVERED], ids=[c[0] for c in COVERED])
def test_the_results_a_narrowed_set_holds(batches: tuple[Batch, ...], expected: list[str]) -> None:
    assert [found.test_id for found in covered(RUN, batches)] == expected


def test_a_file_that_did_not_import_fails_every_path_under_it() -> None:
    broken = TestResult("t/e.py", TestOutcome.ERROR, 0.0, "CPU-1", NOT_GPU, 0)
    assert covered([broken], [Batch("CPU-1", ("t/e.py::test_x",), NOT_GPU)]) == [broken]


def fault(function: str, **caught: bool) -> Fault:
    mutant = Mutant("src/p.py", function, Operator.OFF_BY_ONE, 1, "1", "2", "")
    return Fault("c0ffee", mutant, frozenset({"t/a.py::one"}), {Rule(name): found for name, found in caught.items()})


def test_a_miss_is_a_fault_the_full_set_catches_and_the_rule_does_not() -> None:
    faults = (
        fault("caught_by_both", **{"full set": True, "touched, function grain": True}),
        fault("missed", **{"full set": True, "touched, function grain": False}),
        fault("caught_by_neither", **{"full set": False, "touched, function grain": False}),
    )
    cost = Cost(0.0, 0.0, 0.0, 0.0)
    commit = Replayed("c0ffee", "beef", "a commit", (), {}, {}, {Rule.FULL: cost}, faults)
    assert [found.mutant.unit for found in misses([commit], Rule.FUNCTION)] == ["missed"]
