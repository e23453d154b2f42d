"""Golden files: `Golden` is the type of the suite's `golden` fixture (tests/conftest.py), `check_golden` what
it does."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import pytest

Golden = Callable[[Path, str], None]


def check_golden(path: Path, actual: str, *, update: bool) -> None:
    """Fail with a unified diff when `actual` differs from the file at `path` (a missing file counts as
    empty); with `update`, write `actual` there instead."""
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8") if path.exists() else ""
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True), str(path), "actual"
        )
        pytest.fail(f"{path} differs from the output (rewrite it with --update-goldens):\n" + "".join(diff))
