"""`ci-tool stage lost`: the stages of a GitHub Actions phase that left no exit code (their runner was lost) run
again as their next attempt; a failure is never run again, and with fail-fast stops every retry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.cli import main


def row(stage: str) -> dict[str, object]:
    return {"stage": stage, "runs_on": "ubuntu-latest", "timeout_minutes": 30, "executor": "local"}


def ended(results: Path, **codes: int) -> None:
    """Each stage's results artifact as download-artifact leaves it, with the exit code its job wrote."""
    for stage, code in codes.items():
        folder = results / f"results-{stage.replace('_', '-')}"
        folder.mkdir(parents=True)
        (folder / "exit-code").write_text(f"{code}\n")


def lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], matrices: object, fail_fast: bool
) -> tuple[int, list[str], dict[str, str]]:
    output = tmp_path / "github_output"
    argv = ["stage", "lost", "--matrices", json.dumps(matrices), "--results", str(tmp_path / "results"),
            "--fail-fast", str(fail_fast).lower(), "--github-output", str(output)]  # fmt: skip
    code = main(argv)
    lines = capsys.readouterr().out.splitlines()
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines()) if output.exists() else {}
    return code, lines, outputs


def test_a_stage_without_an_exit_code_runs_again_as_attempt_2_and_one_with_a_failure_does_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ended(tmp_path / "results", **{"CPU_Generic_1": 1})  # results-CPU-Generic-1
    (tmp_path / "results" / "results-A10-PyTorch-1").mkdir()  # uploaded by a step after the kill: no exit code
    code, lines, outputs = lost(tmp_path, capsys, [[row("CPU-Generic-1")], [row("A10-PyTorch-1")]], False)
    assert code == 0
    assert lines == [
        "CPU-Generic-1: ended with exit code 1, a failure: not run again",
        "A10-PyTorch-1: no result (its runner was lost): runs again on a fresh runner as A10-PyTorch-1-attempt-2",
    ]
    assert json.loads(outputs["matrix"]) == [row("A10-PyTorch-1-attempt-2")]
    assert outputs["failed"] == "true"


def test_with_fail_fast_a_failure_stops_every_retry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ended(tmp_path / "results", **{"CPU_Generic_1": 1})
    code, lines, outputs = lost(tmp_path, capsys, [[row("CPU-Generic-1"), row("A10-PyTorch-1")]], True)
    assert (code, json.loads(outputs["matrix"]), outputs["failed"]) == (0, [], "true")
    assert lines[1] == (
        "A10-PyTorch-1: no result (lost, or cancelled by fail-fast): not run again, as fail-fast stops the rest "
        "after CPU-Generic-1's failure"
    )


def test_with_fail_fast_and_no_failure_every_stage_without_a_result_runs_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A10-PyTorch-1 lost its runner; fail-fast cancelled A10-PyTorch-2 with it: both run again, CPU-Generic-1 passed
    ended(tmp_path / "results", **{"CPU_Generic_1": 0})
    matrices = [[row("CPU-Generic-1")], [row("A10-PyTorch-1"), row("A10-PyTorch-2")]]
    code, lines, outputs = lost(tmp_path, capsys, matrices, True)
    assert [r["stage"] for r in json.loads(outputs["matrix"])] == ["A10-PyTorch-1-attempt-2", "A10-PyTorch-2-attempt-2"]
    assert (code, outputs["failed"], lines[0]) == (
        0,
        "false",
        "CPU-Generic-1: ended with exit code 0, passed: not run again",
    )


def test_an_attempt_lost_again_is_not_run_again_past_the_retries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines, outputs = lost(tmp_path, capsys, [[row("A10-PyTorch-1-attempt-2")]], False)
    assert (code, json.loads(outputs["matrix"]), outputs["failed"]) == (0, [], "false")
    assert lines == ["A10-PyTorch-1-attempt-2: no result (its runner was lost): not run again, after 2 attempts"]


@pytest.mark.parametrize(
    ("matrices", "message"),
    [
        ('{"stage": "A10-PyTorch-1"}', "error: --matrices: expected a JSON list of matrices (lists of rows), found {"),
        (
            '[["A10-PyTorch-1"]]',
            "error: --matrices: row 1: expected an object with a stage name, found 'A10-PyTorch-1'",
        ),
        ("[[", "error: --matrices: expected JSON, found '[[' ("),
    ],
    ids=["not-a-list", "row-not-an-object", "not-json"],
)
def test_matrices_that_are_not_the_plan_jobs_are_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], matrices: str, message: str
) -> None:
    argv = ["stage", "lost", "--matrices", matrices, "--results", str(tmp_path), "--fail-fast", "true"]
    assert main(argv) == 1
    assert capsys.readouterr().err.startswith(message)


def test_an_exit_code_file_that_holds_no_exit_code_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "results-A10-PyTorch-1"
    folder.mkdir()
    (folder / "exit-code").write_text("killed\n")
    argv = ["stage", "lost", "--matrices", json.dumps([[row("A10-PyTorch-1")]]), "--results", str(tmp_path),
            "--fail-fast", "true"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{folder / 'exit-code'}: expected the exit code of `ci-tool stage run`, found 'killed'" in err
