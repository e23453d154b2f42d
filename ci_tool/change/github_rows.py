"""The GitHub API's answers about a pull request's change as the change's rows, checked field by field the way
git_rows.py reads git's: a field of the wrong type, or a path git would never write, is one located line. Pure
(the answers come in as values; github_read.py asks for them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_tool.change.value import ChangedPath, FileStatus
from ci_tool.dispatch.answers import AnswerSource
from ci_tool.errors import DispatchError

# GitHub's file statuses -> ours ("copied" adds a path; "changed" changes only its mode).
_STATUS = {
    "added": FileStatus.ADDED,
    "copied": FileStatus.ADDED,
    "modified": FileStatus.MODIFIED,
    "changed": FileStatus.MODIFIED,
    "unchanged": FileStatus.MODIFIED,
    "removed": FileStatus.REMOVED,
    "renamed": FileStatus.RENAMED,
}

def required_text(answer: AnswerSource, data: Mapping[str, Any], key: str, path: str = "") -> str:
    """`data[key]`, a non-empty string (anything else: one located line naming the answer)."""
    value = answer.text(data, key, path)
    if not value:
        raise answer.error(f"{path}.{key}" if path else key, "a path or sha (a non-empty string)", data.get(key))
    return value


def changed_path(answer: AnswerSource, row: Mapping[str, Any], path: str) -> ChangedPath:
    """One pulls/N/files row, checked field by field (a field of the wrong type is one located line)."""
    status = _STATUS.get(answer.text(row, "status", path), FileStatus.MODIFIED)  # a status of its own: a change
    renamed = status is FileStatus.RENAMED
    return ChangedPath(_git_path(answer, row, "filename", path), status,
                       _git_path(answer, row, "previous_filename", path) if renamed else None)  # fmt: skip


def _git_path(answer: AnswerSource, row: Mapping[str, Any], key: str, path: str) -> str:
    """A changed path as git writes one (relative, `/`-separated, no `.`, `..` or empty part, no NUL or line
    break): any other would be matched against the rules as written (`docs/../src/x.py` as a docs change) while
    CI reads git's own path, so the preview could narrow below what CI runs."""
    found = required_text(answer, row, key, path)
    parts = found.split("/")
    if any(part in ("", ".", "..") for part in parts) or any(ch in found for ch in "\0\n\r"):
        raise answer.error(f"{path}.{key}", "a path as git writes one (no '.', '..' or empty part, no NUL or "
                           "line break)", found)  # fmt: skip
    return found


def utf8(data: bytes, where: str) -> str:
    """A rule input's text, as strictly as CI's test-db reader takes it: a file it refuses never narrows."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DispatchError(
            f"read {where}: expected UTF-8 text, found byte {data[error.start]:#04x} at offset {error.start}",
            hint="CI's test-db reader refuses it too: save the file as UTF-8",
        ) from None
