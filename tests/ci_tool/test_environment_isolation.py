"""A caller's ci-tool and CI variables reach no test of ci-tool: a real pytest run of tests that record runs,
with a user's history and a CI stage's variables set, passes and writes nothing where they point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Tests that write the default history (in process and from child ci-tool processes) and start pytest.
RECORDING_TESTS = (
    "tests/ci_tool/run/test_run_cli.py::test_stage_run_writes_the_output_dir_and_history",
    "tests/ci_tool/run/test_run_cli.py::test_parallel_stage_runs_share_one_history",
    "tests/ci_tool/history/test_history_store.py::test_history_path",
)


def test_a_users_history_and_stage_variables_reach_no_test(tmp_path: Path) -> None:
    history = tmp_path / "users-history.sqlite"
    env = {
        **os.environ,
        "CI_TOOL_HISTORY": str(history),
        "CI_TOOL_PERF_GATE": "record",
        "CI_TOOL_STAGE": "X",
        "stageName": "X",
        "GITHUB_OUTPUT": str(tmp_path / "github-output"),
    }
    command = [sys.executable, "-m", "pytest", f"--basetemp={tmp_path / 'basetemp'}", *RECORDING_TESTS]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert not history.exists() and not (tmp_path / "github-output").exists()
