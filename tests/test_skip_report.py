"""tests/skip_report.py: a real pytest session writes its skips, each with whether it is `gpu`-marked, and the
summary .ci/run prints fails on any other skip."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.skip_report import HINT, SKIPS_FILE_ENV, main, summary

ROOT = Path(__file__).resolve().parents[1]
SUITE = {
    "conftest.py": "from tests.skip_report import pytest_configure\n",
    "test_cases.py": f"""\
import os

import pytest


@pytest.mark.gpu
@pytest.mark.skip(reason="needs a CUDA device")
def test_on_gpu():
    pass


def test_skipped_in_its_body():
    pytest.skip("no chromium")


@pytest.mark.xfail(reason="known bug")
def test_expected_to_fail():
    assert False


def test_runs_without_the_variable():
    assert {SKIPS_FILE_ENV!r} not in os.environ
""",
}


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_session_writes_its_skips_and_hides_the_variable_from_its_tests(
    tmp_path: Path, workers: tuple[str, ...]
) -> None:
    """Under pytest-xdist the tests run in worker processes; their skips still reach the file."""
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text)
    skips_file = tmp_path / "skips.json"
    env = {**os.environ, SKIPS_FILE_ENV: str(skips_file), "PYTHONPATH": str(ROOT)}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::pytest.PytestUnknownMarkWarning",
        *workers,
    ]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(json.loads(skips_file.read_text()), key=lambda skip: skip["test"]) == [
        {"test": "test_cases.py::test_on_gpu", "reason": "needs a CUDA device", "gpu": True},
        {"test": "test_cases.py::test_skipped_in_its_body", "reason": "no chromium", "gpu": False},
    ]


GPU_SKIP = {"test": "t.py::test_a", "reason": "needs a CUDA device", "gpu": True}
OTHER_SKIP = {"test": "t.py::test_b", "reason": "no chromium", "gpu": False}


@pytest.mark.parametrize(
    ("skips", "lines", "errors"),
    [
        ([], ["skipped: 0 tests, 0 of them gpu-marked"], []),
        (
            [GPU_SKIP, {**GPU_SKIP, "test": "t.py::test_c"}],
            ["skipped: 2 tests, 2 of them gpu-marked", "     2 gpu: needs a CUDA device"],
            [],
        ),
        (
            [GPU_SKIP, OTHER_SKIP],
            [
                "skipped: 2 tests, 1 of them gpu-marked",
                "     1 gpu: needs a CUDA device",
                "     1 NOT gpu: no chromium",
            ],
            [f"error: t.py::test_b skipped and is not gpu-marked: no chromium {HINT}"],
        ),
    ],
    ids=["none", "only-gpu", "one-not-gpu"],
)
def test_the_summary_lists_skips_by_reason_and_errs_on_each_one_not_gpu_marked(
    skips: list[dict[str, object]], lines: list[str], errors: list[str]
) -> None:
    assert summary(skips) == (lines, errors)


@pytest.mark.parametrize(
    ("skips", "code"), [([GPU_SKIP], 0), ([GPU_SKIP, OTHER_SKIP], 1)], ids=["only-gpu", "one-not-gpu"]
)
def test_the_exit_code_is_1_when_a_skip_is_not_gpu_marked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], skips: list[dict[str, object]], code: int
) -> None:
    (tmp_path / "skips.json").write_text(json.dumps(skips))
    assert main([str(tmp_path / "skips.json")]) == code


def test_a_missing_file_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "none.json")]) == 1
    assert capsys.readouterr().err == (
        f"error: {tmp_path / 'none.json'}: expected the skips the test session wrote, found "
        f"[Errno 2] No such file or directory: '{tmp_path / 'none.json'}'\n"
    )


def test_the_act_tests_skip_where_githubs_actions_are_missing_and_the_skip_check_fails(tmp_path: Path) -> None:
    """The CI host has act and GitHub's pinned actions: where either is missing the act tests skip, saying which,
    and the skip check .ci/run makes fails on them (as on a missing Slurm)."""
    skips_file = tmp_path / "skips.json"
    env = {**os.environ, SKIPS_FILE_ENV: str(skips_file), "CI_TOOL_SHARED_ACTIONS": str(tmp_path / "no-actions")}
    command = [sys.executable, "-m", "pytest", "-q", "tests/ci_tool/actions/test_act_runner.py"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    skips = json.loads(skips_file.read_text())
    reason = (
        f"GitHub's actions are not on this machine: no {tmp_path / 'no-actions'} "
        "(set $CI_TOOL_SHARED_ACTIONS to a folder holding one `name@commit` folder per pinned action)"
    )
    runs_act = "tests/ci_tool/actions/test_act_runner.py::test_each_job_has_its_result_and_log"
    assert runs_act in [skip["test"] for skip in skips]
    assert {(skip["reason"], skip["gpu"]) for skip in skips} == {(reason, False)}
    assert main([str(skips_file)]) == 1
