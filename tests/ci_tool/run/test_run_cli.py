"""`ci-tool run` and `ci-tool stage run` through the real entry point, in a copy of the failing suite."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit

SLOW_CATALOG = """\
version: 1
families:
- {name: CPU-Generic, platform: cpu, context: l0_slow, splits: 1}
"""
SLOW_DB = "version: 0.0.1\nl0_slow:\n- condition: {}\n  tests: [cases/case_slow.py]\n"
SLOW_CASES = "import time\n\ndef test_quick():\n    pass\n\ndef test_slow():\n    time.sleep(60)\n"


@pytest.fixture
def in_suite(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(suite)
    return suite


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def recorded_runs(root: Path) -> list[tuple[str, str, list[str]]]:
    with HistoryStore(root / ".ci-tool" / "history.sqlite") as store:
        return [
            (r.command, r.state, [s.name for s in queries.run_stages(store, r.run_id)])
            for r in reversed(queries.recent_runs(store))
        ]


def test_run_serves_cpu_stages_and_reports_gpu_stages_waiting(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys, "run", '/bot run --stage-list "CPU-Generic-Post-Merge-1, A10-PyTorch-1"', "--catalog", "stages.yml"
    )
    assert (code, out.splitlines()[-1]) == (0, "1 passed, 0 failed, 0 skipped; 1 stage waiting for a runner")
    assert "A10-PyTorch-1: waiting for a runner: needs 1 A10 GPU; this machine has no GPU" in out
    assert "## ci-tool run `" in out and ": **passed here, 1 stage waiting for a runner**" in out
    assert recorded_runs(in_suite) == [
        (
            '/bot run --stage-list "CPU-Generic-Post-Merge-1, A10-PyTorch-1"',
            "pending",
            ["A10-PyTorch-1", "CPU-Generic-Post-Merge-1"],
        )
    ]


def test_run_takes_flags_alone(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "run", "--catalog", "stages.yml", "--", '--stage-list "CPU-Generic-Post-Merge-1"')
    assert (code, out.splitlines()[-1]) == (0, "1 passed, 0 failed, 0 skipped")


def test_run_refuses_unknown_stages(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "run", '/bot run --stage-list "CPU-Generik-1"', "--catalog", "stages.yml")
    assert code == 1
    assert err.startswith("error: ") and "CPU-Generik-1" in err and "CPU-Generic-1" in err
    assert not (in_suite / ".ci-tool").exists()


def test_run_needs_a_run_command(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "run", "/bot kill", "--catalog", "stages.yml")
    assert (code, err) == (
        1,
        "error: expected a `/bot run` command, found '/bot kill' "
        'Hint: e.g. ci-tool run "/bot run --stage-list CPU-Generic-1"\n',
    )


def test_stage_run_writes_the_output_dir_and_history(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "stage", "run", "CPU-Generic-Post-Merge-1", "--catalog", "stages.yml", "--output-dir", "results/x"
    )
    cases = junit.parse_junit(in_suite / "results" / "x" / "junit.xml").cases
    assert (code, out.splitlines()[-1]) == (0, "1 passed, 0 failed, 0 skipped")
    assert [(c.nodeid, c.outcome, c.stage) for c in cases] == [
        ("cases/case_basic.py::test_marked_gpu4", TestOutcome.PASSED, "CPU-Generic-Post-Merge-1")
    ]
    assert recorded_runs(in_suite) == [
        ("ci-tool stage run CPU-Generic-Post-Merge-1", "passed", ["CPU-Generic-Post-Merge-1"])
    ]


def test_stage_run_of_a_failing_stage_exits_1(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (in_suite / "test-db" / "l0_fixture.yml").write_text(
        "version: 0.0.1\nl0_fixture:\n- condition: {}\n  tests: [cases/case_basic.py::test_assert_fails]\n"
        "l0_green:\n- condition: {}\n  tests: [cases/case_basic.py::test_pass]\n"
    )
    code, out, _ = run(capsys, "stage", "run", "CPU-Generic", "--shard", "1", "--catalog", "stages.yml")
    assert (code, out.splitlines()[-1]) == (1, "0 passed, 1 failed, 0 skipped")


def test_dry_run_prints_lists_and_commands_and_runs_nothing(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", "--dry-run")
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "stage CPU-Generic-1: context l0_fixture, not sharded, 8 of 8 rendered lines, 1 isolated"
    assert "  cases/case_isolated.py ISOLATION" in lines
    assert sum(" -m pytest -p ci_tool.run.plugin " in line for line in lines) == 2
    assert not (in_suite / ".ci-tool").exists()


SLURM_CATALOG = """\
version: 1
families:
- {name: GB200-8_GPUs-2_Nodes-PyTorch, platform: 'auto:gb200-flex', context: l0_green, splits: 1, timeout_minutes: 90,
   executor: slurm}
"""


def test_a_slurm_dry_run_prints_the_sbatch_line_and_the_srun_launch(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_suite / "slurm.yml").write_text(SLURM_CATALOG)
    name = "GB200-8_GPUs-2_Nodes-PyTorch-1"
    code, out, err = run(capsys, "stage", "run", name, "--catalog", "slurm.yml", "--executor", "slurm", "--dry-run")
    lines = out.splitlines()
    folder = in_suite / ".ci-tool" / "runs" / "<run-id>" / name / "slurm"
    assert (code, err) == (0, "")  # no warning: the cluster, not this machine, runs it
    assert lines[1] == (
        'query: {"auto_trigger": "others", "backend": "pytorch", "gpu": "GB200", "orchestrator": "mpi", '
        '"stage": "pre_merge", "system_gpu_count": "8"}'
    )  # stage-name keys only, as the reference's sbatch stages render
    assert lines[3] == "slurm job: " + shlex.join(
        [
            "sbatch", "--parsable", f"--job-name={name}", f"--chdir={in_suite}", f"--output={folder}/%j.out",
            f"--error={folder}/%j.err", "--nodes=2", "--ntasks-per-node=1", "--no-requeue", "--partition=gb200-flex",
            "--gres=gpu:4", "--time=90", "--comment=ci-tool run <run-id>", f"{folder}/job.sh",
        ]
    )  # fmt: skip
    launches = [line for line in lines if " -m pytest " in line]
    assert launches and all(" srun --nodes=2 --ntasks=2 --ntasks-per-node=1 " in line for line in launches)
    assert not (in_suite / ".ci-tool").exists()


def test_a_slurm_partition_needs_the_slurm_executor(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", "--slurm-partition", "x")
    assert (code, err.splitlines()[-1]) == (2, "Error: --slurm-partition needs --executor slurm")


def test_stage_run_warns_on_a_machine_that_is_no_runner_for_it(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_suite / "facts.json").write_text(json.dumps({"gpu": None, "system_gpu_count": 0}))
    code, _, err = run(
        capsys, "stage", "run", "A10-PyTorch-1", "--catalog", "stages.yml", "--system-info", "facts.json", "--dry-run"
    )
    assert (code, err) == (
        0,
        "warning: this machine is not a runner for A10-PyTorch-1 (needs 1 A10 GPU; this machine has no GPU); "
        "running anyway\n",
    )


def test_ctrl_c_exits_130_and_keeps_partial_results(suite: Path) -> None:
    (suite / "slow.yml").write_text(SLOW_CATALOG)
    (suite / "test-db" / "l0_slow.yml").write_text(SLOW_DB)
    (suite / "cases" / "case_slow.py").write_text(SLOW_CASES)
    command = [
        sys.executable,
        "-m",
        "ci_tool",
        "stage",
        "run",
        "CPU-Generic-1",
        "--catalog",
        "slow.yml",
        "--output-dir",
        "out",
    ]
    runner = subprocess.Popen(command, cwd=suite, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events = suite / "out" / "parts" / "p01-main.events.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "test_slow" not in (events.read_text() if events.exists() else ""):
        time.sleep(0.05)
    os.kill(runner.pid, signal.SIGINT)
    out, _ = runner.communicate(timeout=30)
    assert (runner.returncode, out.splitlines()[-1]) == (130, "1 passed, 0 failed, 1 skipped")
    assert recorded_runs(suite) == [("ci-tool stage run CPU-Generic-1", "interrupted", ["CPU-Generic-1"])]


def test_parallel_stage_runs_share_one_history(suite: Path) -> None:
    def start(output: str) -> subprocess.Popen[str]:
        command = [
            sys.executable,
            "-m",
            "ci_tool",
            "stage",
            "run",
            "CPU-Generic-Post-Merge-1",
            "--catalog",
            "stages.yml",
        ]
        return subprocess.Popen([*command, "--output-dir", output], cwd=suite, stdout=subprocess.PIPE, text=True)

    runners = [start(f"out/{n}") for n in range(3)]
    assert [r.wait(timeout=60) for r in runners] == [0, 0, 0]
    assert [state for _, state, _ in recorded_runs(suite)] == ["passed"] * 3
