"""The child of where_modes_bind cannot write a read-only folder or file, whoever runs the suite, and reads
them as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci_tool.file_modes import TIMEOUT_SECONDS, where_modes_bind

WRITE_NEW_FILE = "open('new.txt', 'w')"
WRITE_FILE = "open('kept.txt', 'a')"
READ_FILE = "print(open('kept.txt').read(), end='')"


@pytest.fixture
def read_only_folder(tmp_path: Path):  # type: ignore[no-untyped-def]
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "kept.txt").write_text("kept\n")
    (folder / "kept.txt").chmod(0o444)
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


def python_in(folder: Path, code: str) -> subprocess.CompletedProcess[str]:
    command = where_modes_bind([sys.executable, "-c", code])
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False, timeout=TIMEOUT_SECONDS)


@pytest.mark.parametrize("code", [WRITE_NEW_FILE, WRITE_FILE], ids=["new-file", "existing-file"])
def test_the_child_cannot_write_a_read_only_folder_or_file(read_only_folder: Path, code: str) -> None:
    done = python_in(read_only_folder, code)
    last_line = done.stderr.splitlines()[-1] if done.stderr else ""
    assert (done.returncode, last_line.split(":")[0]) == (1, "PermissionError")
    assert sorted(path.name for path in read_only_folder.iterdir()) == ["kept.txt"]


def test_the_child_reads_a_read_only_file(read_only_folder: Path) -> None:
    done = python_in(read_only_folder, READ_FILE)
    assert (done.returncode, done.stdout, done.stderr) == (0, "kept\n", "")
