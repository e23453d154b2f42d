"""Where a history lives: a SQLite file (the embedded default) or a PostgreSQL database named by a URL.

    --history PATH / $CI_TOOL_HISTORY=PATH        a SQLite file (`.ci-tool/history.sqlite` when neither is set)
    --history postgresql://USER@HOST:PORT/DB      a PostgreSQL database, in libpq's URL form (postgres:// too)

A PostgreSQL URL's password comes from the URL, $PGPASSWORD or ~/.pgpass, as libpq reads them: the URL is
handed to libpq as it was given. The password is never shown: `str()` and `repr()` of a PostgresUrl are
its `shown()` form, the URL without a password, so every message that names the history is safe to print.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from ci_tool.layout import HISTORY_ENV, HISTORY_PATH

POSTGRES_SCHEMES = ("postgresql", "postgres")
POSTGRES_EXTRA = "ci-tool[postgres]"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SECRET_PARAMETERS = ("password", "sslpassword")  # libpq's URL parameters that hold a secret


@dataclass(frozen=True, repr=False)
class PostgresUrl:
    """A PostgreSQL database in libpq's URL form; `url` (with any password) is for libpq only."""

    url: str = field(repr=False)

    def shown(self) -> str:
        """The URL without its password (in the user part, a `password=` or `sslpassword=` parameter)."""
        parts = urlsplit(self.url)
        user, _, host = parts.netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}@{host}" if user else host
        kept = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in _SECRET_PARAMETERS]
        query = urlencode(kept)
        # by hand: urlunsplit drops the `//` of an empty host (a Unix socket's `postgresql:///db`)
        return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")

    def secrets(self) -> tuple[str, ...]:
        """The passwords this URL carries, to be blotted from a driver's message that might echo them."""
        parts = urlsplit(self.url)
        found = [parts.password, unquote(parts.password)] if parts.password else []  # as written, and as meant
        found += [v for k, v in parse_qsl(parts.query) if k in _SECRET_PARAMETERS and v]
        return tuple(found)

    def __str__(self) -> str:
        return self.shown()

    def __repr__(self) -> str:
        return f"PostgresUrl({self.shown()!r})"


History = Path | PostgresUrl


def locate(value: str | Path | PostgresUrl) -> History:
    """A `--history` value as a location: a `postgresql://` URL, else a SQLite path."""
    if isinstance(value, PostgresUrl | Path):
        return value
    match = _SCHEME.match(value)
    if match and match.group(1).lower() in POSTGRES_SCHEMES:
        return PostgresUrl(value)
    return Path(value)


def history_location(option: str | Path | None, environ: Mapping[str, str] = os.environ) -> History:
    """`--history`, else $CI_TOOL_HISTORY, else `.ci-tool/history.sqlite` under the working directory."""
    if option:
        return locate(option)
    if environ.get(HISTORY_ENV):
        return locate(environ[HISTORY_ENV])
    return HISTORY_PATH


def shown(history: History) -> str:
    """How messages name a history: the path, or the URL without its password."""
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
    match = _SCHEME.match(value.strip())
    if not match or match.group(1).lower() not in POSTGRES_SCHEMES:
        return False
    try:
        return bool(PostgresUrl(value.strip()).secrets())
    except ValueError:  # a malformed URL (a bad port): it may still hold a password
        return True
