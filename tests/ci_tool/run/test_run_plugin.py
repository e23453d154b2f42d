"""The test-list plugin in real pytest processes over a copy of tests/fixtures/failing_suite."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit

LIST = """\
cases/case_basic.py::test_pass
cases/case_basic.py::test_prints_timeout TIMEOUT (3)
cases/case_basic.py::test_own_timeout TIMEOUT (3)
cases/case_basic.py::TestClassTimeout TIMEOUT (4)
cases/case_basic.py::test_block_out_of_range
cases/case_basic.py -m "gpu4"
cases/case_basic.py::TestGroup -k "beta"
cases/case_waived.py
cases/nope.py
cases/case_basic.py::test_nothing
cases/case_basic.py -k "zzz"
cases/case_basic.py -k "a and"
cases/case_basic.py::test_assert_fails XFAIL (known bug)
"""

WAIVES = """\
cases/case_waived.py::test_waived_everywhere SKIP (https://bugs/1)
full:A10/cases/case_waived.py::test_waived_on_a10 SKIP (https://bugs/2)
full:H100/cases/case_basic.py::test_pass SKIP (https://bugs/3)
"""


class Run:
    def __init__(self, root: Path, returncode: int, output: str) -> None:
        self.root = root
        self.returncode = returncode
        self.output = output
        self.report: dict[str, Any] = json.loads((root / "report.json").read_text())
        self.cases = {case.nodeid: case for case in junit.parse_junit(root / "junit.xml").cases}

    def selected(self, entry: str) -> list[str]:
        return next(e["selected"] for e in self.report["entries"] if e["id"] == entry)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, make_suite: Callable[[Path], Path], run_pytest: Any) -> Run:
    root = make_suite(tmp_path_factory.mktemp("plugin") / "suite")
    (root / "list.txt").write_text(LIST)
    (root / "waives.txt").write_text(WAIVES)
    done = run_pytest(
        root,
        "--test-list", "list.txt", "--test-list-report", "report.json", "--waives-file", "waives.txt",
        "--stage-name", "A10-PyTorch-1", "--waive-gpu", "A10", "--junit-stream", "junit.xml",
        "--events", "events.jsonl",
    )  # fmt: skip
    return Run(root, done.returncode, done.stdout + done.stderr)


@pytest.mark.parametrize(
    ("entry", "selected"),
    [
        ("cases/case_basic.py::test_pass", ["cases/case_basic.py::test_pass"]),
        (
            "cases/case_basic.py::test_block_out_of_range",
            ["cases/case_basic.py::test_block_out_of_range[17]", "cases/case_basic.py::test_block_out_of_range[4242]"],
        ),
        ("cases/case_basic.py::TestClassTimeout", ["cases/case_basic.py::TestClassTimeout::test_list_wins_over_class"]),
        ('cases/case_basic.py -m "gpu4"', ["cases/case_basic.py::test_marked_gpu4"]),
        ('cases/case_basic.py::TestGroup -k "beta"', ["cases/case_basic.py::TestGroup::test_beta"]),
        (
            "cases/case_waived.py",
            ["cases/case_waived.py::test_waived_everywhere", "cases/case_waived.py::test_waived_on_a10"],
        ),
    ],
    ids=["node", "parametrized-parent", "class", "mark", "keyword", "file"],
)
def test_entry_selects(run: Run, entry: str, selected: list[str]) -> None:
    assert run.selected(entry) == selected


def test_only_selected_items_run(run: Run) -> None:
    assert sorted(run.cases) == sorted(run.report["collected"])
    assert "cases/case_basic.py::TestGroup::test_alpha" not in run.cases


def test_entries_that_collect_nothing_are_reported(run: Run) -> None:
    assert run.report["uncollected"] == [
        {"line": 9, "id": "cases/nope.py", "reason": "no such file or folder"},
        {"line": 10, "id": "cases/case_basic.py::test_nothing", "reason": "collected no test"},
        {"line": 11, "id": 'cases/case_basic.py -k "zzz"', "reason": "no collected test matches -k 'zzz'"},
        {
            "line": 12,
            "id": 'cases/case_basic.py -k "a and"',
            "reason": "invalid entry: expected a pytest -k expression, found 'a and' "
            "(expected not OR left parenthesis OR identifier; got end of input at column 6)",
        },
    ]


def test_uncollected_entries_in_terminal_summary(run: Run) -> None:
    assert "line 9: 'cases/nope.py' collected nothing (no such file or folder)" in run.output


@pytest.mark.parametrize(
    ("nodeid", "timeout_args"),
    [
        ("cases/case_basic.py::test_prints_timeout", "(180,)"),
        ("cases/case_basic.py::test_own_timeout", "(7,)"),
        ("cases/case_basic.py::TestClassTimeout::test_list_wins_over_class", "(240,)"),
    ],
    ids=["list-minutes", "function-marker-wins", "list-beats-class-marker"],
)
def test_list_timeout_becomes_marker(run: Run, nodeid: str, timeout_args: str) -> None:
    assert run.cases[nodeid].stdout == f"timeout marker: {timeout_args}\n"


@pytest.mark.parametrize(
    ("nodeid", "outcome", "message"),
    [
        ("cases/case_waived.py::test_waived_everywhere", TestOutcome.SKIPPED, "waived: https://bugs/1"),
        ("cases/case_waived.py::test_waived_on_a10", TestOutcome.SKIPPED, "waived: https://bugs/2"),
        ("cases/case_basic.py::test_pass", TestOutcome.PASSED, ""),
    ],
    ids=["waived", "waived-on-this-gpu", "waived-on-another-gpu"],
)
def test_waives_skip_with_reason(run: Run, nodeid: str, outcome: str, message: str) -> None:
    assert (run.cases[nodeid].outcome, run.cases[nodeid].message) == (outcome, message)


def test_waived_tests_carry_the_reason_as_property(run: Run) -> None:
    assert run.cases["cases/case_waived.py::test_waived_everywhere"].prop(junit.WAIVED_PROPERTY) == "https://bugs/1"


def test_xfail_entry(run: Run) -> None:
    case = run.cases["cases/case_basic.py::test_assert_fails"]
    assert (case.outcome, case.message) == (TestOutcome.SKIPPED, "xfail: known bug")


def test_failures_keep_exception_type_and_message(run: Run) -> None:
    case = run.cases["cases/case_basic.py::test_block_out_of_range[17]"]
    assert (case.outcome, case.kind, case.message) == (
        TestOutcome.FAILED,
        "IndexError",
        "IndexError: block 17 at 0x11000 is out of range for pool /tmp/pool-17/kv",
    )


def test_junit_is_prefixed_with_the_stage(run: Run) -> None:
    text = (run.root / "junit.xml").read_text()
    assert 'classname="A10-PyTorch-1.cases.case_basic.TestGroup" name="test_beta"' in text
    assert '<testsuite name="A10-PyTorch-1" tests="11" failures="2" errors="0" skipped="3"' in text


def test_events_record_every_start_and_finish(run: Run) -> None:
    events = [json.loads(line) for line in (run.root / "events.jsonl").read_text().splitlines()]
    starts = [e["nodeid"] for e in events if e["event"] == "start"]
    finishes = [e["nodeid"] for e in events if e["event"] == "finish"]
    assert (events[0], events[-1]["event"]) == ({"event": "collected", "count": 11}, "done")
    assert starts == finishes == run.report["collected"]


def test_no_op_without_test_list(suite: Path, run_pytest: Any) -> None:
    done = run_pytest(suite, "cases/case_basic.py", "--junit-stream", "junit.xml")
    assert "3 failed, 7 passed" in done.stdout
    assert not (suite / "junit.xml").exists()


def test_hang_leaves_finished_results_and_the_unfinished_test(suite: Path, run_pytest: Any) -> None:
    (suite / "list.txt").write_text("cases/case_hang.py\n")
    done = run_pytest(
        suite, "--test-list", "list.txt", "--junit-stream", "junit.xml", "--events", "events.jsonl",
        "--timeout-method", "thread",
    )  # fmt: skip
    events = [json.loads(line) for line in (suite / "events.jsonl").read_text().splitlines()]
    assert done.returncode != 0 and "Timeout" in done.stdout
    assert [c.nodeid for c in junit.parse_junit(suite / "junit.xml").cases] == ["cases/case_hang.py::test_before_hang"]
    assert events[-1] == {
        "event": "start",
        "nodeid": "cases/case_hang.py::test_hang",
        "time": events[-1]["time"],
        "timeout": 2.0,
    }


def test_collection_error_is_reported_and_recorded(suite: Path, run_pytest: Any) -> None:
    (suite / "cases" / "case_broken.py").write_text("import no_such_module_anywhere\n\ndef test_x():\n    pass\n")
    (suite / "list.txt").write_text("cases/case_broken.py::test_x\ncases/case_basic.py::test_pass\n")
    run_pytest(
        suite, "--test-list", "list.txt", "--test-list-report", "report.json", "--junit-stream", "junit.xml",
        "--continue-on-collection-errors",
    )  # fmt: skip
    report = json.loads((suite / "report.json").read_text())
    cases = junit.parse_junit(suite / "junit.xml").cases
    assert report["uncollected"] == [
        {"line": 1, "id": "cases/case_broken.py::test_x", "reason": "collection error in cases/case_broken.py"}
    ]
    assert [(c.nodeid, c.outcome, c.kind) for c in cases] == [
        ("cases/case_broken.py", TestOutcome.ERROR, "CollectionError"),
        ("cases/case_basic.py::test_pass", TestOutcome.PASSED, ""),
    ]


def test_entries_that_once_killed_pytest_are_reported_as_invalid(suite: Path, run_pytest: Any) -> None:
    deep = "(" * 2000 + "test_pass" + ")" * 2000
    (suite / "list.txt").write_text(
        "cases/case_basic.py::test_pass\n"
        "cases/case_basic.py::test_prints_timeout TIMEOUT (\u00b2)\n"
        f"cases/case_basic.py::test_own_timeout TIMEOUT ({'9' * 5000})\n"
        f'cases/case_basic.py -k "{deep}"\n'
        f'cases/case_basic.py -k "test_pass(x={"9" * 5000})"\n'
        "cases/case_basic.py::test_pass\fcases/case_basic.py::test_nothing\n"
    )
    done = run_pytest(suite, "--test-list", "list.txt", "--test-list-report", "report.json")
    report = json.loads((suite / "report.json").read_text())
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert [(e["line"], e["reason"].split(",")[0].split(" found ")[0]) for e in report["uncollected"]] == [
        (2, "invalid entry: expected TIMEOUT (N) with N a positive whole number of minutes"),
        (3, "invalid entry: expected TIMEOUT (N) with N at most 10080 minutes (a week)"),
        (4, "invalid entry: expected a pytest -k expression"),
        (5, "invalid entry: expected a pytest -k expression"),
        (6, "invalid entry: expected a test line of visible characters"),
    ]
    assert report["collected"] == ["cases/case_basic.py::test_pass"]


def test_a_list_that_is_not_utf8_is_a_usage_error(suite: Path, run_pytest: Any) -> None:
    (suite / "list.txt").write_bytes(b"cases/case_basic.py::test_pass\ncases/\xff.py\n")
    done = run_pytest(suite, "--test-list", "list.txt")
    assert (done.returncode, "INTERNALERROR" in done.stderr) == (4, False)
    assert "list.txt:2:7: cannot read the test list: it is not UTF-8 text (byte 0xff)" in done.stderr
