"""Atomic writes on real files: the text, the mode the written file ends up with, nothing left behind."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tool.atomic import write_text_atomically, write_text_new
from ci_tool.errors import CiToolError


@pytest.fixture
def umask() -> Iterator[None]:
    """Restore the process's umask after a test sets its own."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    ("mask", "expected"),
    [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664), (0o000, 0o666)],
    ids=["umask-022", "umask-077", "umask-002", "umask-000"],
)
def test_a_new_file_gets_the_umasks_mode(tmp_path: Path, umask: None, mask: int, expected: int) -> None:
    os.umask(mask)
    write_text_atomically(tmp_path / "new.txt", "text\n")
    assert (mode_of(tmp_path / "new.txt"), (tmp_path / "new.txt").read_text()) == (expected, "text\n")


@pytest.mark.parametrize(
    ("mode", "mask"),
    [(0o640, 0o022), (0o755, 0o022), (0o600, 0o000), (0o666, 0o077)],
    ids=["group-read", "executable", "private-under-open-umask", "open-under-private-umask"],
)
def test_a_replaced_file_keeps_its_mode(tmp_path: Path, umask: None, mode: int, mask: int) -> None:
    target = tmp_path / "kept.txt"
    target.write_text("old\n")
    target.chmod(mode)
    os.umask(mask)
    write_text_atomically(target, "new\n")
    assert (mode_of(target), target.read_text()) == (mode, "new\n")


@pytest.mark.parametrize("existing", [None, 0o644], ids=["new file", "replacing an open file"])
def test_a_secret_gets_the_mode_asked_for_whatever_the_umask_or_the_old_file(
    tmp_path: Path, umask: None, existing: int | None
) -> None:
    target = tmp_path / "job.json"
    if existing is not None:
        target.write_text("old\n")
        target.chmod(existing)
    os.umask(0o000)
    write_text_atomically(target, "token\n", mode=0o600)
    assert (mode_of(target), target.read_text()) == (0o600, "token\n")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "kept.txt"
    target.write_text("old\n")
    with pytest.raises(CiToolError) as error:
        write_text_atomically(tmp_path / "missing" / "x.txt", "new\n", what="the report")
    assert (
        str(error.value)
        == f"cannot write the report to {str(tmp_path / 'missing' / 'x.txt')!r}: No such file or directory"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]


def test_a_new_file_is_written_whole(tmp_path: Path) -> None:
    write_text_new(tmp_path / "p.diff", "diff\n", what="the proposal")
    assert [p.name for p in tmp_path.iterdir()] == ["p.diff"] and (tmp_path / "p.diff").read_text() == "diff\n"


@pytest.mark.parametrize("kind", ["file", "dangling link"])
def test_a_new_file_never_replaces_what_is_there(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "p.diff"
    if kind == "file":
        target.write_text("the user's notes\n")
    else:
        target.symlink_to(tmp_path / "nowhere")
    with pytest.raises(CiToolError) as raised:
        write_text_new(target, "diff\n", what="the proposal", hint="pass another --output")
    assert str(raised.value) == (
        f"expected no file at {str(target)!r} for the proposal, found one; it is left as it is "
        "Hint: pass another --output"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.diff"]
    assert target.is_symlink() if kind != "file" else target.read_text() == "the user's notes\n"
