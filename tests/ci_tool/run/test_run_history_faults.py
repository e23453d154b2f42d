"""`ci-tool stage run` when the results folder fails, through the real entry point in a copy of the failing
suite: a run that cannot keep results never starts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tool.cli import main

STAGE = "CPU-Generic-Post-Merge-1"


@pytest.fixture
def in_suite(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(suite)
    monkeypatch.delenv("CI_TOOL_HISTORY", raising=False)
    return suite


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def stage_run(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return run(capsys, "stage", "run", STAGE, "--catalog", "stages.yml", *extra)


def below_a_file(root: Path) -> tuple[list[str], str, str]:
    (root / "afile").write_text("")
    return ["--results-dir", "afile/runs"], "afile/runs/", "Not a directory"


def output_dir_below_a_file(root: Path) -> tuple[list[str], str, str]:
    (root / "afile").write_text("")
    return ["--output-dir", "afile/out"], "afile/out", "Not a directory"


def not_writable(root: Path) -> tuple[list[str], str, str]:
    (root / "locked").mkdir(mode=0o555)
    return ["--results-dir", "locked"], "locked/", "Permission denied"


@pytest.mark.parametrize(
    "make",
    [
        below_a_file,
        output_dir_below_a_file,
        pytest.param(
            not_writable,
            marks=pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file modes: nothing is read-only"),
        ),
    ],
    ids=["below-a-file", "output-dir-below-a-file", "not-writable"],
)
def test_a_results_folder_that_cannot_be_made_stops_the_run_before_it_is_recorded(
    in_suite: Path, capsys: pytest.CaptureFixture[str], make: Callable[[Path], tuple[list[str], str, str]]
) -> None:
    options, folder, reason = make(in_suite)
    code, out, err = stage_run(capsys, *options, "--history", "h.sqlite")
    shown = err.split("'")[1]
    assert (code, out) == (1, "")
    assert shown.startswith(folder)
    assert err == (
        f"error: cannot create the results folder {shown!r}: {reason} "
        "Hint: pass --results-dir (or --output-dir) a folder you can write\n"
    )
    assert not (in_suite / "h.sqlite").exists()
