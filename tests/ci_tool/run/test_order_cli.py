"""A stage's tests ordered by likelihood through the real entry point, in a copy of the failing suite: the
history's recent failures and the change's touch records decide what each pytest process runs first;
`stage show` and `--dry-run` say so in one line, and `--no-reorder` keeps the list's order."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history.store import HistoryStore, TestRecord
from ci_tool.history.touch_table import record_touches, stamped
from ci_tool.outcomes import TestOutcome
from tests.ci_tool.history.planted import failed, record_run

CPU_ONLY = ("--system-info", "cpu-only.json")
LISTS = """\
version: 0.0.1
l0_fixture:
- condition: {}
  tests:
  - cases/case_basic.py::test_pass
  - cases/case_basic.py::TestGroup
  - cases/case_isolated.py ISOLATION
l0_green:
- condition: {}
  tests: [cases/case_basic.py::test_pass]
"""
BETA = "cases/case_basic.py::TestGroup::test_beta"
ALPHA = "cases/case_basic.py::TestGroup::test_alpha"
ALONE = "cases/case_isolated.py::test_runs_alone"
HOUR = 3600.0


@pytest.fixture
def in_suite(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The suite with three tests and an ISOLATION line, and a history whose run of an hour ago failed
    test_beta (no rerun saved it) and the isolated test."""
    (suite / "test-db" / "l0_fixture.yml").write_text(LISTS)
    monkeypatch.chdir(suite)
    with HistoryStore(suite / ".ci-tool" / "history.sqlite") as store:
        tests = [failed(BETA, "AssertionError: x"), failed(ALONE, "AssertionError: y"),
                 TestRecord(ALPHA, TestOutcome.PASSED, 1.0)]  # fmt: skip
        record_run(store, "earlier", time.time() - HOUR, {"CPU-Generic-1": (10.0, tests)})
    return suite


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def started(root: Path, label: str) -> list[str]:
    """The tests the stage's process `label` started, in order."""
    (events,) = root.glob(f".ci-tool/runs/*/CPU-Generic-1/parts/{label}.events.jsonl")
    records = [json.loads(line) for line in events.read_text().splitlines()]
    return [record["nodeid"] for record in records if record["event"] == "start"]


def test_a_recent_failure_runs_first_and_the_isolated_test_still_alone(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", *CPU_ONLY)
    assert code == 0  # test_runs_alone passes: it ran in a process of its own
    assert (started(in_suite, "p01-main"), started(in_suite, "p02-isolated-1")) == (
        [BETA, "cases/case_basic.py::test_pass", ALPHA],
        [ALONE],
    )


def test_no_reorder_keeps_the_list_s_order(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", *CPU_ONLY, "--no-reorder")
    assert started(in_suite, "p01-main") == ["cases/case_basic.py::test_pass", ALPHA, BETA]


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def test_a_test_touching_the_change_runs_first(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """test_alpha's CPU record ran src/thing.py's `value`, which the change edits: it runs right after the
    recent failure, before the test of the list that touches nothing."""
    (in_suite / "src").mkdir()
    (in_suite / "src" / "thing.py").write_text("def value():\n    return 1\n")
    (in_suite / ".gitignore").write_text(".ci-tool/\n")
    git(in_suite, "init", "-q")
    git(in_suite, "add", ".")
    git(in_suite, "commit", "-q", "-m", "base")
    head = git(in_suite, "rev-parse", "HEAD").strip()
    with HistoryStore(in_suite / ".ci-tool" / "history.sqlite") as store:
        rows = stamped({("src/thing.py", "value"): frozenset({ALPHA})}, stage="CPU-Generic-1", gpu_type="CPU",
                       commit=head)  # fmt: skip
        record_touches(store, "earlier", rows, recorded_at=time.time())
    (in_suite / "src" / "thing.py").write_text("def value():\n    return 2\n")
    argv = ["run", '/bot run --stage-list "CPU-Generic-1"', "--catalog", "stages.yml", *CPU_ONLY]
    run(capsys, *argv, "--base", "HEAD")
    assert started(in_suite, "p01-main") == [BETA, ALPHA, "cases/case_basic.py::test_pass"]


DRY_RUNS = [
    ("by likelihood", (), "order: 2 recent failures first"),
    ("off", ("--no-reorder",), "order: the list's order (reordering is off)"),
]


@pytest.mark.parametrize(("extra", "line"), [c[1:] for c in DRY_RUNS], ids=[c[0] for c in DRY_RUNS])
def test_the_dry_run_says_the_order(
    in_suite: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], line: str
) -> None:
    code, out = run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", "--dry-run", *extra)
    assert (code, [found for found in out.splitlines() if found.startswith("order: ")]) == (0, [line])


def test_the_dry_run_s_commands_read_the_priority_file(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", "--dry-run")
    priority = in_suite / ".ci-tool" / "runs" / "<run-id>" / "CPU-Generic-1" / "lists" / "priority.txt"
    commands = [line for line in out.splitlines() if " -m pytest " in line]
    assert [f"-p ci_tool.run.order '--priority-file={priority}'" in command for command in commands] == [True, True]


def test_stage_show_says_the_order_and_lists_it_in_json(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "stage", "show", "CPU-Generic-1", "--catalog", "stages.yml", "--json")
    assert (code, json.loads(out)["order"]) == (
        0,
        {
            "summary": "order: 2 recent failures first",
            "first": [{"test_id": BETA, "tier": "failed"}, {"test_id": ALONE, "tier": "failed"}],
        },
    )
