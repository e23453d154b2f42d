"""Perf mode through real pytest runs: recorded numbers land in perf_results.csv/.yaml; stages export their gate."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from ci_tool.run.invocation import RunSettings, planned_invocations
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db

SUITE = """
def test_decode(record_property):
    record_property("tokens_per_s", 1234.5)
    record_property("backend", "cuda")  # not a number: not a perf metric

def test_plain():
    pass
"""


def test_perf_mode_logs_each_numeric_property(
    tmp_path: Path, run_pytest: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    (tmp_path / "test_decode.py").write_text(SUITE)
    logs = tmp_path / "logs"
    result = run_pytest(
        tmp_path,
        "-p",
        "no:cacheprovider",
        "--stage-name",
        "DGX_H200-PyTorch-Perf-1",
        "--perf",
        "--perf-log-formats",
        "csv",
        "--perf-log-formats",
        "yaml",
        "--perf-log-dir",
        str(logs),
    )
    assert result.returncode == 0, result.stdout
    assert f"ci-tool perf: 1 metric(s) written to {logs}/perf_results.csv, {logs}/perf_results.yaml" in result.stdout
    assert (logs / "perf_results.csv").read_text() == (
        "test,metric,value,outcome\nDGX_H200-PyTorch-Perf-1/test_decode.py::test_decode,tokens_per_s,1234.5,passed\n"
    )
    assert yaml.safe_load((logs / "perf_results.yaml").read_text()) == {
        "perf_results": [
            {
                "test": "DGX_H200-PyTorch-Perf-1/test_decode.py::test_decode",
                "metric": "tokens_per_s",
                "value": 1234.5,
                "outcome": "passed",
            }
        ]
    }


def test_without_perf_nothing_is_logged(
    tmp_path: Path, run_pytest: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    (tmp_path / "test_decode.py").write_text(SUITE)
    result = run_pytest(tmp_path, "-p", "no:cacheprovider", "--perf-log-dir", str(tmp_path / "logs"))
    assert result.returncode == 0 and "ci-tool perf" not in result.stdout
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize(
    ("stage", "gate"),
    [
        ("DGX_B200-PyTorch-PerfSanity-1", "fail"),
        ("DGX_B200-PyTorch-PerfSanity-Post-Merge-1", "warn"),
        ("DGX_H200-PyTorch-Perf-1", "fail"),
        ("DGX_H200-PyTorch-1", "none"),
    ],
    ids=["perf-sanity pre-merge fails", "perf-sanity post-merge warns", "perf fails", "functional records"],
)
def test_a_stage_exports_its_perf_gate_to_its_tests(stage: str, gate: str, tmp_path: Path) -> None:
    (tmp_path / "l0_x.yml").write_text("version: 0.0.1\nl0_x:\n- tests: [tests/perf]\n")
    plan = Planner(load_test_db(tmp_path), {}).stage_of_list(parse_stage_name(stage), "l0_x")
    settings = RunSettings(rootdir=tmp_path, results_dir=tmp_path / "results", run_id="r1")
    (invocation,) = planned_invocations(plan, settings)  # what the runner and --dry-run both start
    environment = invocation.environment({"PATH": "/bin"})
    assert environment == {
        "PATH": "/bin",
        "CI_TOOL_STAGE": stage,
        "CI_TOOL_RUN_ID": "r1",
        "stageName": stage,
        "CI_TOOL_PERF_GATE": gate,
        "CI_TOOL_PERF_RESULTS": str(invocation.perf_results_file),  # its perf cases' rows go back to ci-tool
    }
