"""The test-list plugin under pytest-xdist (a stage's tests in several worker processes): real pytest runs of
the failing suite, with and without `--numprocesses`, give the same testcases, report and events."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit

LIST = """\
cases/case_basic.py
cases/case_waived.py
cases/case_basic.py::test_assert_fails XFAIL (known bug)
cases/nope.py
"""
WAIVES = "cases/case_waived.py::test_waived_everywhere SKIP (https://bugs/1)\n"


def _run(root: Path, run_pytest: Any, *extra: str) -> tuple[dict[str, tuple[TestOutcome, str]], dict[str, Any], list]:
    for name in ("junit.xml", "report.json", "events.jsonl"):
        (root / name).unlink(missing_ok=True)
    run_pytest(
        root, "--test-list", "list.txt", "--test-list-report", "report.json", "--waives-file", "waives.txt",
        "--stage-name", "CPU-Generic-1", "--junit-stream", "junit.xml", "--events", "events.jsonl",
        "--timeout-method", "thread", *extra,
    )  # fmt: skip
    cases = {case.nodeid: (case.outcome, case.kind) for case in junit.parse_junit(root / "junit.xml").cases}
    events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]
    return cases, json.loads((root / "report.json").read_text()), events


@pytest.fixture(scope="module")
def suite_root(tmp_path_factory: pytest.TempPathFactory, make_suite: Callable[[Path], Path]) -> Path:
    root = make_suite(tmp_path_factory.mktemp("workers") / "suite")
    (root / "list.txt").write_text(LIST)
    (root / "waives.txt").write_text(WAIVES)
    return root


def test_two_workers_give_the_testcases_report_and_events_of_one_process(suite_root: Path, run_pytest: Any) -> None:
    alone_cases, alone_report, _ = _run(suite_root, run_pytest)
    cases, report, events = _run(suite_root, run_pytest, "--numprocesses=2")
    assert cases == alone_cases and len(cases) > 5
    assert (report["uncollected"], sorted(report["collected"])) == (
        alone_report["uncollected"],
        sorted(alone_report["collected"]),
    )
    starts = [e["nodeid"] for e in events if e["event"] == "start"]
    finishes = [e["nodeid"] for e in events if e["event"] == "finish"]
    assert sorted(starts) == sorted(finishes) == sorted(report["collected"])
    assert [e["event"] for e in events].count("done") == 1 and events[-1]["event"] == "done"


@pytest.mark.parametrize(
    ("case_file", "dies_in", "outcome", "kind", "message"),
    [
        ("case_crash.py", "test_crash", TestOutcome.ERROR, junit.CRASH_KIND, "Crash: its worker process died after"),
        ("case_hang.py", "test_hang", TestOutcome.FAILED, junit.TIMEOUT_KIND, "Timeout: the test did not finish"),
    ],
    ids=["crash", "timeout"],
)
def test_a_worker_that_dies_in_a_test_fails_that_test_alone(
    suite: Path, run_pytest: Any, case_file: str, dies_in: str, outcome: TestOutcome, kind: str, message: str
) -> None:
    (suite / "list.txt").write_text(f"cases/{case_file}\n")
    (suite / "waives.txt").write_text("")
    _run(suite, run_pytest, "--numprocesses=2")
    cases = {case.nodeid: case for case in junit.parse_junit(suite / "junit.xml").cases}
    died = cases.pop(f"cases/{case_file}::{dies_in}")
    assert (died.outcome, died.kind) == (outcome, kind)
    assert died.message.startswith(message) and "crashed while running" in died.message
    assert {case.outcome for case in cases.values()} == {TestOutcome.PASSED} and len(cases) == 2
