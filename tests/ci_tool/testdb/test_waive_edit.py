"""Waives-file edits as unified diffs that `git apply` applies to the very file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from ci_tool.testdb.waive_edit import unified_diff, with_lines_added, with_lines_removed

SORTED = "# waives\na.py::t SKIP (x)\nc.py::t SKIP (y)\n"


@pytest.mark.parametrize(
    ("text", "new", "expected"),
    [
        (SORTED, ["b.py::t SKIP (z)"], "# waives\na.py::t SKIP (x)\nb.py::t SKIP (z)\nc.py::t SKIP (y)\n"),
        (
            SORTED,
            ["0.py::t SKIP", "d.py::t SKIP"],
            "# waives\n0.py::t SKIP\na.py::t SKIP (x)\nc.py::t SKIP (y)\nd.py::t SKIP\n",
        ),
        ("a SKIP", ["b SKIP"], "a SKIP\nb SKIP\n"),
        ("a SKIP\r\n", ["b SKIP"], "a SKIP\r\nb SKIP\r\n"),
        ("", ["b SKIP"], "b SKIP\n"),
    ],
    ids=["in its sorted place", "first and last", "no newline at the end", "crlf", "empty file"],
)
def test_lines_added(text: str, new: list[str], expected: str) -> None:
    assert with_lines_added(text, new) == expected


def test_lines_removed_by_number() -> None:
    assert with_lines_removed(SORTED, [2]) == "# waives\nc.py::t SKIP (y)\n"


def test_a_new_file_is_diffed_from_dev_null() -> None:
    assert unified_diff(None, "a SKIP\n", "test-db/waives.txt") == (
        "--- /dev/null\n+++ b/test-db/waives.txt\n@@ -0,0 +1 @@\n+a SKIP\n"
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize(
    ("before", "edit"),
    [
        (SORTED, lambda t: with_lines_added(t, ["b.py::t SKIP (z)"])),
        (SORTED, lambda t: with_lines_removed(t, [2, 3])),
        ("a SKIP", lambda t: with_lines_added(t, ["b SKIP"])),
        (None, lambda t: with_lines_added(t or "", ["b SKIP"])),
    ],
    ids=["add", "remove", "no newline at the end", "new file"],
)
def test_git_applies_the_diff(tmp_path: Path, before: str | None, edit) -> None:  # type: ignore[no-untyped-def]
    waives = tmp_path / "test-db" / "waives.txt"
    waives.parent.mkdir()
    if before is not None:
        waives.write_bytes(before.encode())
    after = edit(before)
    (tmp_path / "change.diff").write_text(unified_diff(before, after, "test-db/waives.txt"))
    applied = subprocess.run(["git", "apply", "change.diff"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert (applied.returncode, applied.stderr, waives.read_bytes()) == (0, "", after.encode())
