"""An "unexpected error" (a bug of ours) keeps its traceback in `.ci-tool/crash/`, the newest few only, and
says where: crash logs never pile up in $TMPDIR."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
import pytest

from ci_tool import cli
from ci_tool.layout import CRASH_LOGS_KEPT


@click.command()
def boom() -> None:
    raise RuntimeError("a bug")


@pytest.fixture
def crashing_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The CLI with a verb `boom` that crashes, run in tmp_path/work; returns the temporary folder it sees."""
    monkeypatch.setitem(cli.COMMANDS, "boom", f"{__name__}:boom")
    (tmp_path / "work").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    return tmp_path / "tmp"


def test_a_crash_says_where_its_traceback_is(crashing_cli: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["boom"]) == 1
    (log,) = Path(".ci-tool/crash").iterdir()
    where = f".ci-tool/crash/{log.name}"
    assert capsys.readouterr().err == f"error: unexpected RuntimeError: a bug (traceback written to {where})\n"
    assert 'raise RuntimeError("a bug")' in log.read_text()


def test_crash_logs_stay_bounded_and_out_of_the_temporary_folder(crashing_cli: Path) -> None:
    codes = [cli.main(["boom"]) for _ in range(CRASH_LOGS_KEPT + 3)]
    assert codes == [1] * (CRASH_LOGS_KEPT + 3)
    assert (len(list(Path(".ci-tool/crash").iterdir())), list(crashing_cli.iterdir())) == (CRASH_LOGS_KEPT, [])


def test_an_unwritable_folder_crashes_into_one_temporary_file(
    crashing_cli: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path(".ci-tool").write_text("not a folder")  # .ci-tool/crash cannot be made
    assert [cli.main(["boom"]) for _ in range(2)] == [1, 1]
    assert [path.name for path in crashing_cli.iterdir()] == ["ci-tool-crash.log"]
    assert capsys.readouterr().err.endswith(f"(traceback written to {crashing_cli / 'ci-tool-crash.log'})\n")
