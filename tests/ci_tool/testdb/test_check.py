"""Static checks: duplicates within one condition, stale and duplicate waives, redundant TIMEOUT (60)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.testdb.check import covers, duplicate_tests, duplicate_waives, redundant_timeouts, stale_waives
from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.waives import parse_waives


@pytest.mark.parametrize(
    ("selector", "test_id", "expected"),
    [
        ("a/b.py::t", "a/b.py::t", True),
        ("a/", "a/b.py::t", True),
        ("a", "a/b.py::t", True),
        ("a/b.py", "a/b.py::T::t", True),
        ("a/b.py::t", "a/b.py::t[x-1]", True),
        ("a/b.py::t", "a/b.py::test", False),
        ("a/b", "a/bc.py", False),
    ],
    ids=["equal", "folder with slash", "folder", "file", "parametrized parent", "name prefix", "path prefix"],
)
def test_covers(selector: str, test_id: str, expected: bool) -> None:
    assert covers(selector, test_id) is expected


def test_duplicates_are_per_condition(tmp_path: Path) -> None:
    (tmp_path / "l0_x.yml").write_text("""\
version: 0.0.1
l0_x:
- condition: {terms: {stage: pre_merge}}
  tests: [a.py, b.py]
- condition: {terms: {stage: post_merge}}
  tests: [a.py]
- condition: {terms: {stage: pre_merge}}
  tests: [b.py TIMEOUT (5)]
""")
    findings = duplicate_tests(load_test_db(tmp_path))
    assert [str(f) for f in findings] == [
        f"{tmp_path}/l0_x.yml:8:11 (l0_x[2].tests[0]): expected each test once per condition, found 'b.py' again "
        "(first at line 4) Hint: delete one of the two lines"
    ]


def test_stale_waives_name_no_listed_test(tmp_path: Path) -> None:
    (tmp_path / "l0_x.yml").write_text(
        "version: 0.0.1\nl0_x:\n- tests: [unit/a.py, 'unit/b.py -k \"fast\"', c.py::t]\n"
    )
    waives, _ = parse_waives(
        "unit/a.py::test_one SKIP (inside a listed file)\n"
        "unit SKIP (covers listed files)\n"
        'unit/b.py -m "slow" SKIP (same file, other filter)\n'
        "c.py::t[x] SKIP (a parametrization of a listed test)\n"
        "gone.py::t SKIP (stale)\n"
        "full:A10/unit/z.py SKIP (stale too)\n",
        "waives.txt",
    )
    findings = stale_waives(load_test_db(tmp_path), waives)
    assert [(str(f.where), f.message) for f in findings] == [
        ("waives.txt:5:1", "expected a waive to name a listed test, found 'gone.py::t' in no test-db list"),
        ("waives.txt:6:1", "expected a waive to name a listed test, found 'unit/z.py' in no test-db list"),
    ]


def test_a_timeout_of_the_default_60_minutes_is_redundant(tmp_path: Path) -> None:
    (tmp_path / "l0_x.yml").write_text(
        "version: 0.0.1\nl0_x:\n- tests:\n  - a.py TIMEOUT (60)\n  - b.py TIMEOUT (90)\n  - c.py -k fast TIMEOUT(60)\n"
    )
    findings = redundant_timeouts(load_test_db(tmp_path))
    assert [str(f).removeprefix(str(tmp_path) + "/") for f in findings] == [
        "l0_x.yml:4:10 (l0_x[0].tests[0]): expected no TIMEOUT marker that repeats the default of 60 minutes, "
        "found 'TIMEOUT (60)' on 'a.py' Hint: delete ` TIMEOUT (60)`: every test gets 60 minutes",
        "l0_x.yml:6:18 (l0_x[0].tests[2]): expected no TIMEOUT marker that repeats the default of 60 minutes, "
        "found 'TIMEOUT(60)' on 'c.py -k fast' Hint: delete ` TIMEOUT(60)`: every test gets 60 minutes",
    ]


def test_a_test_waived_twice_for_the_same_gpus_is_a_duplicate() -> None:
    waives, _ = parse_waives(
        "a.py::t SKIP (one)\n"
        "full:A10/a.py::t SKIP (only on A10: not the same waive)\n"
        "b.py c.py SKIP (two paths on one line)\n"
        "a.py::t SKIP (reworded)\n"
        "full:A10/c.py SKIP (A10)\n"
        "full:A10/c.py SKIP (again)\n",
        "waives.txt",
    )
    assert [str(f) for f in duplicate_waives(waives)] == [
        "waives.txt:4:1: expected each test waived once, found 'a.py::t' again (first at line 1) "
        "Hint: delete one of the two lines",
        "waives.txt:6:1: expected each test waived once, found 'full:A10/c.py' again (first at line 5) "
        "Hint: delete one of the two lines",
    ]
