"""The perf gate through real pytest runs: fail in pre-merge perf stages, warn in post-merge, strict by default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.stages.modes import PERF_GATE_ENV, PerfGate, perf_gate_from_env

SUITE = """
from ci_tool.perf_gate import perf_gate  # noqa: F401

def test_regressed(perf_gate):
    perf_gate(False, "decode 10 tokens/s is below the floor 600 tokens/s")

def test_fine(perf_gate):
    perf_gate(True, "never shown")
"""


@pytest.mark.parametrize(
    ("environ", "gate"),
    [
        ({}, PerfGate.FAIL),
        ({PERF_GATE_ENV: "warn"}, PerfGate.WARN),
        ({PERF_GATE_ENV: "none"}, PerfGate.NONE),
        ({PERF_GATE_ENV: "bogus"}, PerfGate.FAIL),
    ],
    ids=["unset is strict", "warn", "none", "unknown is strict"],
)
def test_gate_from_env(environ: dict[str, str], gate: PerfGate) -> None:
    assert perf_gate_from_env(environ) is gate


def run_suite(tmp_path: Path, gate: str | None) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_perf.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if k != PERF_GATE_ENV}
    if gate is not None:
        env[PERF_GATE_ENV] = gate
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rw", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_a_regression_fails_when_the_gate_fails(tmp_path: Path) -> None:
    result = run_suite(tmp_path, "fail")
    assert result.returncode == 1
    assert "decode 10 tokens/s is below the floor 600 tokens/s" in result.stdout
    assert "1 failed, 1 passed" in result.stdout


def test_a_regression_only_warns_when_the_gate_warns(tmp_path: Path) -> None:
    result = run_suite(tmp_path, "warn")
    assert result.returncode == 0, result.stdout
    assert (
        "PerfRegressionWarning: decode 10 tokens/s is below the floor 600 tokens/s (perf gate: warn)" in result.stdout
    )
    assert "2 passed, 1 warning" in result.stdout
