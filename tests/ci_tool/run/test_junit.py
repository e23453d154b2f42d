"""JUnit: our writer round-trips, a torn stream keeps its finished testcases, pytest's own XML reads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit

CASES = [
    junit.CaseResult("tests/a.py::test_ok", TestOutcome.PASSED, 0.25, stage="CPU-PyTorch-1"),
    junit.CaseResult(
        "tests/a.py::TestC::test_bad[x-1]",
        TestOutcome.FAILED,
        1.5,
        message="ValueError: bad <value> & \x1b[31mred",
        text="E   ValueError: bad",
        kind="ValueError",
        stdout="out\n",
        stderr="err\n",
        properties=((junit.RERUN_PROPERTY, "failed"),),
        stage="CPU-PyTorch-1",
    ),
    junit.CaseResult("tests/b.py::test_skip", TestOutcome.SKIPPED, message="waived: bug 1", stage="CPU-PyTorch-1"),
]


def test_round_trip(tmp_path: Path) -> None:
    junit.write_junit(tmp_path / "j.xml", "CPU-PyTorch-1", CASES)
    report = junit.parse_junit(tmp_path / "j.xml")
    expected = [CASES[0], replace(CASES[1], message="ValueError: bad <value> & \\x1b[31mred")]
    assert list(report.cases[:2]) == expected
    assert (report.suite_names, report.repaired) == (("CPU-PyTorch-1",), False)


def test_classname_is_prefixed_with_the_stage() -> None:
    assert junit.classname_of("tests/a.py::TestC::test_bad[x-1]", "A10-PyTorch-1") == "A10-PyTorch-1.tests.a.TestC"


def test_stream_is_well_formed_after_every_add(tmp_path: Path) -> None:
    stream = junit.JunitStream(tmp_path / "j.xml", "S")
    counts = []
    for case in CASES:
        stream.add(case)
        counts.append(len(junit.parse_junit(tmp_path / "j.xml").cases))
    assert counts == [1, 2, 3]
    stream.close()
    assert 'tests="3" failures="1" errors="0" skipped="1"' in (tmp_path / "j.xml").read_text()


def test_torn_stream_keeps_finished_testcases(tmp_path: Path) -> None:
    stream = junit.JunitStream(tmp_path / "j.xml", "S")
    stream.add(CASES[0])
    stream.add(CASES[1])
    text = (tmp_path / "j.xml").read_text()
    (tmp_path / "j.xml").write_text(text[: text.rindex("<system-out>")])  # killed in the middle of a write
    report = junit.parse_junit(tmp_path / "j.xml")
    assert ([c.nodeid for c in report.cases], report.repaired) == (["tests/a.py::test_ok"], True)


def test_reads_pytest_junitxml(suite: Path, run_pytest: Any) -> None:
    run_pytest(suite, "cases/case_basic.py::test_assert_fails", "cases/case_basic.py::TestGroup", "--junitxml=p.xml")
    report = junit.parse_junit(suite / "p.xml")
    assert [(c.nodeid, c.outcome) for c in report.cases] == [
        ("cases.case_basic::test_assert_fails", TestOutcome.FAILED),
        ("cases.case_basic.TestGroup::test_alpha", TestOutcome.PASSED),
        ("cases.case_basic.TestGroup::test_beta", TestOutcome.PASSED),
    ]
    assert report.cases[0].message.startswith("AssertionError: arithmetic is broken")
