"""A real git checkout with a small catalog, and `ci-tool` run in it through the CLI, for the stage reuse tests
(test_reuse_cli.py, test_reuse_inputs.py): its runs and stage states as the history records them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord
from ci_tool.outcomes import StageState

CPU_ONLY = ("--system-info", "cpu-only.json")


# Two green stages and one that fails one test of three.
CATALOG = """\
version: 1
families:
- {name: CPU-Generic, platform: cpu, context: l0_green, splits: 1}
- {name: CPU-Generic-Mixed, platform: cpu, context: l0_mixed, splits: 1}
- {name: CPU-Generic-Group, platform: cpu, context: l0_group, splits: 1}
"""


TEST_DB = """\
version: 0.0.1
l0_mixed:
- condition: {}
  tests:
  - cases/case_basic.py::test_pass
  - cases/case_basic.py::TestGroup
  - cases/case_basic.py::test_assert_fails
  - cases/case_params.py
l0_group:
- condition: {}
  tests: [cases/case_basic.py::TestGroup::test_alpha]
"""


# Parameters with blanks: no waive line holds such an id, so a function all of whose tests passed is waived
# whole, and one with a failed test runs again.
PARAMS = """\
import pytest


@pytest.mark.parametrize("x", ["a b", "c d"])
def test_spaced(x):
    pass


@pytest.mark.parametrize("x", ["e f", "g h"])
def test_half(x):
    assert x == "e f"
"""


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def make_checkout(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The failing suite (a copy at `suite`) with the reuse catalog, committed in a fresh git repository; the
    current folder until `monkeypatch` is undone."""
    (suite / "reuse.yml").write_text(CATALOG)
    (suite / "test-db" / "l0_reuse.yml").write_text(TEST_DB)
    (suite / "cases" / "case_params.py").write_text(PARAMS)
    (suite / ".gitignore").write_text(".ci-tool/\n__pycache__/\n")
    git(suite, "init", "-q")
    git(suite, "add", ".")
    git(suite, "commit", "-q", "-m", "the suite")
    monkeypatch.chdir(suite)
    return suite


def ci_tool(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def runs(root: Path) -> list[tuple[RunRecord, list[StageRecord]]]:
    """Every recorded run, oldest first, with its stages."""
    with HistoryStore(root / ".ci-tool" / "history.sqlite", read_only=True) as store:
        return [(run, queries.run_stages(store, run.run_id)) for run in reversed(queries.recent_runs(store))]


def stage_states(stages: list[StageRecord]) -> dict[str, tuple[StageState, str]]:
    return {stage.name: (stage.state, stage.reason) for stage in stages}


# `ci-tool stage run`, as CI runs each stage on an agent of its own (its own run): reuse is over every run of
# the same code, and the pipeline's results folder in the checkout is not code.
def stage_run(name: str, *options: str) -> tuple[str, ...]:
    return ("stage", "run", name, "--catalog", "reuse.yml", *CPU_ONLY, "--output-dir", f"results/{name}", *options)
