"""Freshness: the generated text against the committed text, as unified diffs. Pure."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class StaleFile:
    path: str
    missing: bool  # no committed file at all
    diff: str  # unified diff from the committed text to the generated text

    @property
    def changed_lines(self) -> tuple[int, int]:
        """(removed, added): the diff's lines that were in the committed text, and its new ones."""
        body = self.diff.splitlines()[2:]  # after the ---/+++ header every -/+ line is a text line
        return sum(line.startswith("-") for line in body), sum(line.startswith("+") for line in body)


def stale_files(generated: Mapping[str, str], committed: Mapping[str, str | None]) -> list[StaleFile]:
    """The generated files whose committed text differs (None: not committed), in `generated`'s order."""
    stale: list[StaleFile] = []
    for path, text in generated.items():
        current = committed.get(path)
        if current == text:
            continue
        diff = difflib.unified_diff(
            (current or "").splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
        stale.append(StaleFile(path, current is None, "".join(_terminated(line) for line in diff)))
    return stale


def _terminated(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
