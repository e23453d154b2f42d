"""Edits of a waives file as a reviewable diff, never applied: the file's text in, a unified diff out.

    add     each new line goes before the first waive line that sorts after it (a sorted file stays
            sorted; blank and comment lines are passed over), else at the end
    remove  the given lines (1-based numbers) go

The diff names the file `a/<path>` and `b/<path>`, as git does, so `git apply FILE` (or `patch -p1`)
applies it once a person has read it; line endings follow the file's first line.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

from ci_tool.testdb.lines import strip_comment


def _lines(text: str) -> list[str]:
    """The lines with their endings, split at "\n" only, as the waives parser numbers them."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _split(text: str) -> tuple[list[str], str]:
    """The file's lines with their endings (the last one given one), and the ending new lines get."""
    lines = _lines(text)
    ending = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += ending
    return lines, ending


def with_lines_added(text: str, new_lines: Sequence[str]) -> str:
    """`text` with each of `new_lines` in its sorted place."""
    lines, ending = _split(text)
    for new in sorted(new_lines):
        position = next(
            (index for index, line in enumerate(lines) if strip_comment(line).strip() and line.strip() > new),
            len(lines),
        )
        lines.insert(position, new + ending)
    return "".join(lines)


def with_lines_removed(text: str, line_numbers: Iterable[int]) -> str:
    """`text` without the lines numbered `line_numbers` (1-based)."""
    gone = set(line_numbers)
    lines, _ = _split(text)
    return "".join(line for number, line in enumerate(lines, start=1) if number not in gone)


def unified_diff(before: str | None, after: str, path: str) -> str:
    """The change from `before` (None: no such file yet) to `after` of the file at `path` (relative to the
    repository root)."""
    name = path.removeprefix("./")
    old, new = _lines(before or ""), _lines(after)
    if old and not old[-1].endswith(("\n", "\r")):  # the edit gave the last line its ending: say so
        old[-1] += "\n\\ No newline at end of file\n"
    return "".join(difflib.unified_diff(old, new, "/dev/null" if before is None else f"a/{name}", f"b/{name}"))
