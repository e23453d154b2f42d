"""The multi-node launcher's two roles, as srun starts them (SLURM_PROCID tells them apart): rank 0 runs the
command and hands back its exit status, the other ranks hold their node until rank 0 is done."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def launch(rank: int, done: Path, *command: str) -> subprocess.Popen[str]:
    env = {**os.environ, "SLURM_PROCID": str(rank)}
    argv = [sys.executable, "-m", "ci_tool.run.ranks", f"--done={done}", "--", *command]
    return subprocess.Popen(argv, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_rank_0_runs_the_command_and_passes_its_exit_status_back(tmp_path: Path) -> None:
    done = tmp_path / "p01-main.done"
    lead = launch(0, done, sys.executable, "-c", "print('pytest here'); raise SystemExit(3)")
    assert (lead.wait(timeout=60), lead.stdout.read() if lead.stdout else "") == (3, "pytest here\n")
    assert done.read_text() == "3\n"


def test_the_other_ranks_hold_their_node_until_rank_0_is_done(tmp_path: Path) -> None:
    done = tmp_path / "p01-main.done"
    hold = launch(1, done, "false")
    with pytest.raises(subprocess.TimeoutExpired):
        hold.wait(timeout=1)  # still holding: rank 0 has not finished
    lead = launch(0, done, sys.executable, "-c", "pass")
    assert (lead.wait(timeout=60), hold.wait(timeout=60)) == (0, 0)


def test_a_launch_without_its_done_file_is_a_usage_error() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ci_tool.run.ranks", "pytest"], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stderr) == (2, "usage: python -m ci_tool.run.ranks --done=FILE -- COMMAND...\n")
