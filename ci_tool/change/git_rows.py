"""git's name-status rows (gitinfo.name_status) as the change's rows, the way github_rows.py reads the GitHub
API's. Pure."""

from __future__ import annotations

from collections.abc import Iterable

from ci_tool.change.value import ChangedPath, FileStatus
from ci_tool.gitinfo import NameStatus

# git's letters -> ours (name_status reports copies as A and type changes as M).
_STATUS = {"A": FileStatus.ADDED, "M": FileStatus.MODIFIED, "D": FileStatus.REMOVED, "R": FileStatus.RENAMED}


def changed_paths(listed: Iterable[NameStatus]) -> list[ChangedPath]:
    """Each row as a changed path with its status (a rename with its old path)."""
    return [ChangedPath(found.path, _STATUS[found.letter], found.previous) for found in listed]
