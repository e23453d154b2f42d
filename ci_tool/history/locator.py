"""Where a history lives: a SQLite file (the embedded default) or a PostgreSQL database.

    --history PATH / $CI_TOOL_HISTORY=PATH        a SQLite file (`.ci-tool/history.sqlite` when neither is set)
    --history postgresql://USER@HOST:PORT/DB      a PostgreSQL database, in libpq's URL form (postgres:// too,
                                                  the scheme in any case)
    --history 'host=HOST dbname=DB user=USER'     the same in libpq's keyword form (what psql takes)

A PostgreSQL password comes from the URL, $PGPASSWORD or ~/.pgpass, as libpq reads them: the connection
string is handed to libpq as it was given (but for the scheme, written lowercase). The password is never
shown: `str()` and `repr()` of a PostgresUrl are its `shown()` form, without a password, so every message
that names the history is safe to print. A string libpq would misread (a password with an unencoded `/` or
`@`) is refused here, before libpq can show a part of it (conninfo.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ci_tool.errors import HistoryError, Where
from ci_tool.history import conninfo
from ci_tool.layout import HISTORY_ENV, HISTORY_PATH

POSTGRES_SCHEMES = conninfo.SCHEMES
POSTGRES_EXTRA = "ci-tool[postgres]"


@dataclass(frozen=True, repr=False)
class PostgresUrl:
    """A PostgreSQL database in libpq's URL or keyword form; `url` (with any password) is for libpq only.
    Made by `locate`, which refuses a string libpq would misread."""

    url: str = field(repr=False)

    def shown(self) -> str:
        """The connection string without its password (in the user part, a `password=` or `sslpassword=`
        parameter or keyword), its parameters as written."""
        try:
            return conninfo.parse(self.url).shown
        except conninfo.Refused as refused:  # made without `locate`: still never shown
            return refused.shown

    def secrets(self) -> tuple[str, ...]:
        """The passwords it carries, as written and as meant, to be blotted from a driver's message."""
        try:
            return conninfo.parse(self.url).secrets
        except conninfo.Refused:
            return ()

    def __str__(self) -> str:
        return self.shown()

    def __repr__(self) -> str:
        return f"PostgresUrl({self.shown()!r})"


History = Path | PostgresUrl


def locate(value: str | Path | PostgresUrl) -> History:
    """A `--history` value as a location: a PostgreSQL connection string, else a SQLite path. A connection
    string libpq would misread is a HistoryError that names it without its password."""
    if isinstance(value, PostgresUrl | Path):
        return value
    if not conninfo.is_postgres(value):
        return Path(value)
    try:
        return PostgresUrl(conninfo.parse(value).for_libpq)
    except conninfo.Refused as refused:
        raise HistoryError(refused.why, where=Where(refused.shown), hint=refused.hint) from None


def history_location(option: str | Path | None, environ: Mapping[str, str] = os.environ) -> History:
    """`--history`, else $CI_TOOL_HISTORY, else `.ci-tool/history.sqlite` under the working directory."""
    if option:
        return locate(option)
    if environ.get(HISTORY_ENV):
        return locate(environ[HISTORY_ENV])
    return HISTORY_PATH


def shown(history: History) -> str:
    """How messages name a history: the path, or the connection string without its password."""
    return str(history)


# What opens the history: its location (a SQLite path, or a URL that may hold a password) and libpq's password
# sources. Processes that run a change's code (tests, builds) get none of them: only ci-tool writes the history.
_CREDENTIAL_VARIABLES = (HISTORY_ENV, "PGPASSWORD", "PGPASSFILE")


def without_history_access(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` less every variable that opens the history: $CI_TOOL_HISTORY, libpq's $PGPASSWORD and
    $PGPASSFILE, and any other variable holding a PostgreSQL URL with a password (a CI credential bound under
    another name)."""
    return {
        name: value
        for name, value in environ.items()
        if name not in _CREDENTIAL_VARIABLES and not _is_secret_url(value)
    }


def _is_secret_url(value: str) -> bool:
    """A PostgreSQL connection string (URL or keywords) that holds a password, or that libpq would misread
    (it may hold one)."""
    text = value.strip()
    if not conninfo.is_postgres(text):
        return False
    try:
        return bool(conninfo.parse(text).secrets)
    except (conninfo.Refused, ValueError):
        return True
