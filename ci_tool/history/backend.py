"""What the store asks of a database: the two backends (sqlite_backend, postgres_backend) answer alike.

Statements are written once with `?` marks (schema.py, the readers, the writers); a backend turns them into
its driver's form. Rows come back as tuples of Python's own types, which rows.py checks.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

Row = tuple[Any, ...]


class Access(enum.StrEnum):
    """What a call was doing with the history when its database failed: errors read `cannot <access> the
    history`, and how long it waited depends on it (postgres_backend)."""

    OPEN = "open"
    READ = "read"
    WRITE = "write"


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchall(self) -> list[Row]: ...


class Writer(Protocol):
    """The open write transaction a store's `write(work)` hands to `work`."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> object: ...

    def lock(self, key: str) -> None:
        """Hold off other writers of `key` until this transaction ends (a stage two agents record at once)."""


Work = Callable[[Writer], None]


class Backend(Protocol):
    version: int  # the schema version of the open history (older only when it is read-only)

    def rows(self, sql: str, parameters: Sequence[object]) -> list[Row]: ...

    def write(self, work: Work, *, hurry: bool = False) -> None: ...

    def close(self) -> None: ...

    def group_concat(self, expression: str) -> str:
        """The aggregate joining `expression`'s non-NULL values of a group with ','."""
        ...


class StoreView(Protocol):
    """A history as the modules the store itself uses see it (rows.py builds its records, owners.py sweeps as
    it opens): store.HistoryStore is one, and they type against this so that none of them imports the store."""

    warn: Callable[[str], None]  # hears each bad row a reader leaves out

    @property
    def path(self) -> object: ...

    def rows(self, sql: str, parameters: Sequence[object] = ..., /) -> list[Row]: ...

    def write(self, work: Work, /) -> None: ...


def upsert(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    """`INSERT INTO table (columns) VALUES (?, ...)`, replacing the row of the same `key` (both backends
    take `ON CONFLICT ... DO UPDATE`; SQLite's `INSERT OR REPLACE` is its own)."""
    updates = ", ".join(f"{column} = excluded.{column}" for column in columns if column not in key)
    action = f"DO UPDATE SET {updates}" if updates else "DO NOTHING"
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) ON CONFLICT ({', '.join(key)}) {action}"
