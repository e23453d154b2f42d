"""What a SQLite error means to a user of the history: one located HistoryError per kind of fault.

SQLITE_CORRUPT*    a damaged page: keep the file aside, a new history starts there
SQLITE_NOTADB      not a SQLite file at all (a wrong --history)
SQLITE_BUSY/LOCKED another process holds the lock past the busy timeout (and every retry)
SQLITE_READONLY*   a write to a file or folder that cannot be written
SQLITE_FULL        the disk under the history is full
anything else      `cannot <open|read|write> the history: <SQLite's words>`
"""

from __future__ import annotations

import shlex
import sqlite3
from pathlib import Path

from ci_tool.errors import HistoryError, Where
from ci_tool.history.backend import Access


def _name(error: sqlite3.Error) -> str:
    return getattr(error, "sqlite_errorname", "") or ""


def is_busy(error: sqlite3.Error) -> bool:
    """Another connection holds the lock: worth trying again."""
    return _name(error).startswith(("SQLITE_BUSY", "SQLITE_LOCKED"))


def cannot_share(error: sqlite3.Error) -> bool:
    """A read-only connection that cannot make the WAL's shared-memory file (a read-only folder)."""
    return _name(error).startswith("SQLITE_READONLY") or _name(error) == "SQLITE_CANTOPEN"


def damaged(path: Path, expected: str, found: str) -> HistoryError:
    """The history file is damaged: where, what was expected and found, and how to start a new one."""
    aside = shlex.join(["mv", str(path), f"{path}.damaged"])
    return HistoryError(
        f"the history is damaged: expected {expected}, found {found}",
        where=Where(str(path)),
        hint=f"keep it aside (`{aside}`) and ci-tool starts a new history there, or pass --history PATH",
    )


def history_error(
    path: Path, error: sqlite3.Error, doing: Access, *, attempts: int = 1, busy_timeout_ms: int
) -> HistoryError:
    """The located error for `error`, met while `doing` (open, read, write) the history at `path`."""
    name, where = _name(error), Where(str(path))
    if name.startswith("SQLITE_CORRUPT"):
        return damaged(path, "a well-formed SQLite file", repr(str(error)))
    if name == "SQLITE_NOTADB":
        return HistoryError(
            "expected a SQLite history file, found a file that is not a SQLite database",
            where=where,
            hint="pass the history file ci-tool writes (--history PATH); this one is left as it is",
        )
    if is_busy(error):
        tries = "1 try" if attempts == 1 else f"{attempts} tries"
        return HistoryError(
            f"the history is locked: expected to {doing} it within {tries} of {busy_timeout_ms / 1000:g} s, "
            "found another process holding its lock",
            where=where,
            hint="let the other ci-tool (or the program that has the file open) finish, or pass --history PATH",
        )
    if name == "SQLITE_FULL":
        return HistoryError(
            f"cannot {doing} the history: expected room on its disk, found the disk full",
            where=where,
            hint="free space there, or pass --history PATH on another disk",
        )
    if name.startswith("SQLITE_READONLY"):
        return HistoryError(
            f"cannot write the history: expected a writable file, found {str(error)!r}",
            where=where,
            hint="make the file and its folder writable, or pass --history PATH",
        )
    return HistoryError(f"cannot {doing} the history: {error}", where=where)
