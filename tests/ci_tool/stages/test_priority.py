"""The order a stage runs its tests in (stages/priority.py): pure ranking over tiny values."""

from __future__ import annotations

import pytest

from ci_tool.change.touch_records import GpuRecord, RecordedFile, TouchEvidence
from ci_tool.change.units import UnitChange
from ci_tool.change.value import ChangeSet
from ci_tool.stages.priority import (
    LIST_ORDER,
    Likelihood,
    Priority,
    RecentFailure,
    Tier,
    changed_test_files,
    prioritize,
    tiers,
    touching_tests,
)
from ci_tool.testdb.lines import TestLine


def line(test_id: str) -> TestLine:
    return TestLine(raw=test_id, test_id=test_id)


LINES = (line("tests/a"), line("tests/b.py::test_b"), line('tests/k -m "not gpu"'))
DURATIONS = {"tests/a/x.py::slow": 9.0, "tests/a/x.py::fast": 0.5, "tests/a/y.py::t": 2.0, "tests/k/z.py::t": 1.0}


def order(likelihood: Likelihood, lines: tuple[TestLine, ...] = LINES) -> list[tuple[str, Tier]]:
    return [(ranked.test_id, ranked.tier) for ranked in prioritize(likelihood, lines, DURATIONS).first]


def red(test_id: str) -> RecentFailure:
    return RecentFailure(test_id, stayed_red=True)


def flaky(test_id: str) -> RecentFailure:
    return RecentFailure(test_id, stayed_red=False)


ORDERS = [
    ("red before flaky before touching",
     Likelihood((flaky("tests/a/x.py::fast"), red("tests/a/x.py::slow")), frozenset({"tests/a/y.py::t"})),
     [("tests/a/x.py::slow", Tier.FAILED), ("tests/a/x.py::fast", Tier.FLAKY), ("tests/a/y.py::t", Tier.TOUCHES)]),
    ("a tier's files together, the shortest on average first (x.py: 4.75 s, y.py: 2 s)",
     Likelihood((red("tests/a/x.py::slow"), red("tests/a/y.py::t"), red("tests/a/x.py::fast"))),
     [("tests/a/y.py::t", Tier.FAILED), ("tests/a/x.py::fast", Tier.FAILED), ("tests/a/x.py::slow", Tier.FAILED)]),
    ("a file in two tiers: a group in each",
     Likelihood((red("tests/a/x.py::slow"), red("tests/a/y.py::t")), frozenset({"tests/a/x.py::fast"})),
     [("tests/a/y.py::t", Tier.FAILED), ("tests/a/x.py::slow", Tier.FAILED), ("tests/a/x.py::fast", Tier.TOUCHES)]),
    ("equal seconds: by path",
     Likelihood(touching=frozenset({"tests/b.py::test_b", "tests/a/zz.py::t"})),
     [("tests/a/zz.py::t", Tier.TOUCHES), ("tests/b.py::test_b", Tier.TOUCHES)]),
    ("a failure that also touches the change ranks as a failure",
     Likelihood((flaky("tests/a/y.py::t"),), frozenset({"tests/a/y.py::t"})),
     [("tests/a/y.py::t", Tier.FLAKY)]),
    ("tests no line selects are left out",
     Likelihood((red("tests/other.py::t"), red("tests/b.py::test_c")), frozenset({"tests/ab/x.py::t"})),
     []),
    ("a line's -k/-m filter is not read: its path decides",
     Likelihood((red("tests/k/z.py::t"),)),
     [("tests/k/z.py::t", Tier.FAILED)]),
    ("a failed file (a collection error) over a node id line",
     Likelihood((red("tests/b.py"),)),
     [("tests/b.py", Tier.FAILED)]),
    ("a changed test file after the failures, before the tests touching the change",
     Likelihood((flaky("tests/a/x.py::fast"),), frozenset({"tests/a/y.py::t"}), frozenset({"tests/b.py"})),
     [("tests/a/x.py::fast", Tier.FLAKY), ("tests/b.py", Tier.CHANGED), ("tests/a/y.py::t", Tier.TOUCHES)]),
    ("a changed test file no line selects is left out",
     Likelihood(changed_tests=frozenset({"tests/other/test_x.py"})),
     []),
    ("nothing suspect", Likelihood(), []),
]  # fmt: skip


@pytest.mark.parametrize(("likelihood", "expected"), [c[1:] for c in ORDERS], ids=[c[0] for c in ORDERS])
def test_the_order(likelihood: Likelihood, expected: list[tuple[str, Tier]]) -> None:
    assert order(likelihood) == expected


def test_a_test_red_and_flaky_in_the_window_is_red() -> None:
    assert tiers(Likelihood((flaky("a.py::t"), red("a.py::t")))) == {"a.py::t": Tier.FAILED}


SUMMARIES = [
    ("off", LIST_ORDER, "order: the list's order (reordering is off)"),
    ("nothing suspect", Priority(),
     "order: the list's order (no test of it failed in 7 days, is a changed test file or touches the change)"),
    ("one of each tier",
     prioritize(Likelihood((red("tests/a/x.py::slow"), flaky("tests/a/y.py::t")), frozenset({"tests/b.py::test_b"})),
                LINES, DURATIONS),
     "order: 1 recent failure, 1 flaky failure, 1 touching the change first"),
    ("plurals, an empty tier left out",
     prioritize(Likelihood((red("tests/a/x.py::slow"), red("tests/a/y.py::t"), red("tests/a/x.py::fast")),
                           frozenset({"tests/b.py::test_b", "tests/a/q.py::t"})), LINES, DURATIONS),
     "order: 3 recent failures, 2 touching the change first"),
    ("a changed test file",
     prioritize(Likelihood(touching=frozenset({"tests/b.py::test_b"}), changed_tests=frozenset({"tests/a/y.py"})),
                LINES, DURATIONS),
     "order: 1 changed test file, 1 touching the change first"),
]  # fmt: skip


@pytest.mark.parametrize(("priority", "summary"), [c[1:] for c in SUMMARIES], ids=[c[0] for c in SUMMARIES])
def test_the_summary_line(priority: Priority, summary: str) -> None:
    assert priority.summary == summary


def test_the_tests_touching_a_change_are_those_its_touch_records_name() -> None:
    def recorded(path: str, unit: str, tests: set[str]) -> RecordedFile:
        # `other` ran the file's other unit, which the change does not edit: it does not touch the change
        units = {unit: frozenset(tests), "other": frozenset({"t.py::other"})}
        return RecordedFile(path, UnitChange(units=(unit,)), {"CPU": GpuRecord(units, ("c0",))})

    evidence = TouchEvidence(files={"src/a.py": recorded("src/a.py", "f", {"t.py::one", "t.py::two"}),
                                    "src/b.py": recorded("src/b.py", "g", {"t.py::two"})})  # fmt: skip
    changes = ChangeSet(files=("src/a.py", "src/b.py", "docs/x.md"), touches=evidence)
    assert touching_tests(changes) == {"t.py::one", "t.py::two"}


def test_no_change_touches_no_test() -> None:
    assert touching_tests(None) == frozenset()


def test_the_changed_test_files_are_the_edited_and_added_ones_named_as_pytest_finds_them() -> None:
    changes = ChangeSet(
        files=("tests/a/test_x.py", "tests/a/y_test.py", "tests/a/conftest.py", "tests/a/helpers.py",
               "src/test_data.txt", "tests/gone/test_old.py", "tools/test_tool.py"),
        deleted=frozenset({"tests/gone/test_old.py"}),
    )  # fmt: skip
    assert changed_test_files(changes) == {"tests/a/test_x.py", "tests/a/y_test.py", "tools/test_tool.py"}
    assert changed_test_files(None) == frozenset()
