"""A stage of the failing suite run for real: processes, resume after hang and crash, rerun, results."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit
from ci_tool.run.invocation import RunSettings
from ci_tool.run.stage_runner import FLAKY_PROPERTY, run_stage
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db

STAGE = "CPU-Generic-1"


def test_stage_fails_with_every_kind_of_failure(fixture_run: Any) -> None:
    result = fixture_run.stage(STAGE)
    assert (result.state, result.reason, result.counts) == ("failed", "", {"passed": 13, "failed": 6, "skipped": 1})


@pytest.mark.parametrize(
    ("nodeid", "outcome", "kind"),
    [
        ("cases/case_hang.py::test_hang", TestOutcome.FAILED, junit.TIMEOUT_KIND),
        ("cases/case_crash.py::test_crash", TestOutcome.ERROR, junit.CRASH_KIND),
        ("cases/case_basic.py::test_assert_fails", TestOutcome.FAILED, "AssertionError"),
    ],
    ids=["hang-is-timeout", "crash", "assertion"],
)
def test_failure_kinds(fixture_run: Any, nodeid: str, outcome: str, kind: str) -> None:
    case = fixture_run.test(STAGE, nodeid).final
    assert (case.outcome, case.kind) == (outcome, kind)


@pytest.mark.parametrize(
    "nodeid",
    [
        "cases/case_hang.py::test_before_hang",
        "cases/case_hang.py::test_after_hang",
        "cases/case_crash.py::test_after_crash",
    ],
    ids=["before-hang", "after-hang", "after-crash"],
)
def test_tests_around_a_hang_or_crash_still_run(fixture_run: Any, nodeid: str) -> None:
    assert fixture_run.test(STAGE, nodeid).final.outcome == TestOutcome.PASSED


def test_every_selected_test_is_recorded_once(fixture_run: Any) -> None:
    nodeids = [test.first.nodeid for test in fixture_run.stage(STAGE).tests]
    assert len(nodeids) == len(set(nodeids)) == 20


def test_flaky_signature_failure_passes_on_rerun(fixture_run: Any) -> None:
    test = fixture_run.test(STAGE, "cases/case_flaky.py::test_flaky_oom")
    assert (test.first.outcome, test.rerun.outcome, test.flaky) == (TestOutcome.FAILED, TestOutcome.PASSED, "cuda-oom")
    assert test.final.prop(FLAKY_PROPERTY) == "cuda-oom"


def test_only_flaky_signature_failures_rerun(fixture_run: Any) -> None:
    assert [t.first.nodeid for t in fixture_run.stage(STAGE).tests if t.rerun] == [
        "cases/case_flaky.py::test_flaky_oom"
    ]


def test_isolation_test_runs_in_its_own_process(fixture_run: Any) -> None:
    result = fixture_run.stage(STAGE)
    assert fixture_run.test(STAGE, "cases/case_isolated.py::test_runs_alone").final.outcome == TestOutcome.PASSED
    assert [p.label for p in result.processes] == [
        "p01-main", "p02-main-resume", "p03-main-resume", "p04-isolated-1", "p05-main-rerun",
    ]  # fmt: skip


def test_waives_skip_on_every_gpu_or_only_their_own(fixture_run: Any) -> None:
    everywhere = fixture_run.test(STAGE, "cases/case_waived.py::test_waived_everywhere").final
    a10_only = fixture_run.test(STAGE, "cases/case_waived.py::test_waived_on_a10").final
    assert (everywhere.outcome, everywhere.message, a10_only.outcome) == (
        TestOutcome.SKIPPED,
        "waived: https://bugs.example/1",
        TestOutcome.FAILED,
    )


def test_uncollected_entries_are_kept(fixture_run: Any) -> None:
    assert fixture_run.stage(STAGE).uncollected == (
        {"line": 7, "id": "cases/case_gone.py::test_removed", "reason": "no such file or folder", "list": "main"},
    )


def test_results_folder(fixture_run: Any) -> None:
    folder = fixture_run.session.results_dir / STAGE
    result = json.loads((folder / "result.json").read_text())
    assert sorted(p.name for p in folder.iterdir()) == [
        "junit.xml",
        "lists",
        "parts",
        "perf-snapshot.json",  # what its perf cases read of the history (perf/handoff.py)
        "rendered.txt",
        "result.json",
        "shard.txt",
    ]
    assert (result["state"], result["counts"], len(result["processes"])) == (
        "failed",
        {"passed": 13, "failed": 6, "skipped": 1},
        5,
    )
    assert result["reruns"] == [
        {"nodeid": "cases/case_flaky.py::test_flaky_oom", "signature": "cuda-oom", "rerun": "passed"}
    ]


def test_merged_junit_is_stage_prefixed_and_final(fixture_run: Any) -> None:
    report = junit.parse_junit(fixture_run.session.results_dir / STAGE / "junit.xml")
    flaky = next(c for c in report.cases if c.nodeid == "cases/case_flaky.py::test_flaky_oom")
    assert (report.suite_names, len(report.cases), flaky.outcome) == ((STAGE,), 20, TestOutcome.PASSED)
    assert {case.stage for case in report.cases} == {STAGE}


def test_green_stage_passes(fixture_run: Any) -> None:
    result = fixture_run.stage("CPU-Generic-Post-Merge-1")
    assert (result.state, result.counts) == ("passed", {"passed": 1, "failed": 0, "skipped": 0})


def _plan(root: Path, context: str, stage: str = STAGE) -> Any:
    db = load_test_db(root / "test-db")
    return Planner(db, {}).stage_of_list(parse_stage_name(stage), context)


def test_pass_on_rerun_makes_the_stage_unstable(suite: Path, make_config: Callable[..., Any]) -> None:
    (suite / "test-db" / "l0_flaky.yml").write_text(
        "version: 0.0.1\nl0_flaky:\n- condition: {}\n  tests: [cases/case_flaky.py, cases/case_basic.py::test_pass]\n"
    )
    settings = RunSettings(suite, suite / "out", "r1", flaky_signatures=make_config(suite).flaky_signatures)
    result = run_stage(_plan(suite, "l0_flaky"), settings)
    assert (result.state, result.counts) == ("unstable", {"passed": 2, "failed": 0, "skipped": 0})


def test_flaky_failure_without_rerun_fails(suite: Path, make_config: Callable[..., Any]) -> None:
    (suite / "test-db" / "l0_flaky.yml").write_text(
        "version: 0.0.1\nl0_flaky:\n- condition: {}\n  tests: [cases/case_flaky.py]\n"
    )
    settings = RunSettings(suite, suite / "out", "r1", rerun_flaky=False)
    assert run_stage(_plan(suite, "l0_flaky"), settings).state == "failed"


RUN_SLOW = """
from pathlib import Path
from ci_tool.stages.planner import Planner
from ci_tool.run.invocation import RunSettings
from ci_tool.run.stage_runner import run_stage
from ci_tool.stages.names import parse_stage_name
from ci_tool.testdb.load import load_test_db

plan = Planner(load_test_db("test-db"), {}).stage_of_list(parse_stage_name("CPU-Generic-1"), "l0_slow")
result = run_stage(plan, RunSettings(Path("."), Path("out"), "r1", interrupt_grace_seconds=5))
print(result.state, result.counts["passed"], [t.first.kind for t in result.tests])
"""


def test_ctrl_c_stops_cleanly_and_keeps_partial_results(slow_suite: Any) -> None:
    slow_suite.start([sys.executable, "-c", RUN_SLOW])
    slow_suite.wait_for_slow_test()
    output, _ = slow_suite.interrupt(signal.SIGINT)
    cases = junit.parse_junit(slow_suite.root / "out" / "junit.xml").cases
    assert output.strip() == "interrupted 1 ['', 'Interrupted']"
    assert not slow_suite.pytest_alive()
    assert [(c.nodeid, c.outcome) for c in cases] == [
        ("cases/case_slow.py::test_quick", TestOutcome.PASSED),
        ("cases/case_slow.py::test_slow", TestOutcome.SKIPPED),
    ]


def test_isolated_test_under_a_folder_line_runs_once_alone(suite: Path) -> None:
    (suite / "test-db" / "l0_overlap.yml").write_text(
        "version: 0.0.1\nl0_overlap:\n- condition: {}\n  tests:\n"
        "  - cases/case_basic.py::TestGroup\n  - cases/case_basic.py::TestGroup::test_beta ISOLATION\n"
    )
    result = run_stage(_plan(suite, "l0_overlap"), RunSettings(suite, suite / "out", "r1"))
    ran = [(p.label, [c.nodeid for c in p.cases]) for p in result.processes]
    assert ran == [
        ("p01-main", ["cases/case_basic.py::TestGroup::test_alpha"]),
        ("p02-isolated-1", ["cases/case_basic.py::TestGroup::test_beta"]),
    ]


def test_an_empty_shard_passes_saying_so(suite: Path) -> None:
    """A family with more shards than tests (a catalog may keep the stage names people type): shard 3 of a
    two-test family has nothing to run, and passes saying why, starting no pytest."""
    (suite / "test-db" / "l0_two.yml").write_text(
        "version: 0.0.1\nl0_two:\n- condition: {}\n  tests: [cases/case_basic.py::test_pass, cases/case_flaky.py]\n"
    )
    db = load_test_db(suite / "test-db")
    plan = Planner(db, {}).stage_of_list(parse_stage_name("CPU-Generic-3"), "l0_two", splits=3)
    result = run_stage(plan, RunSettings(suite, suite / "out", "r1"))
    assert (result.state, result.reason, result.processes) == (
        "passed", "shard 3 of 3 is empty: its family's list holds 2 test(s) for 3 shards", ()
    )  # fmt: skip
