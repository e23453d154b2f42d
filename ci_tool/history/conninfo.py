"""A PostgreSQL connection string, read the way libpq reads it: to name the database without its secrets, and
to refuse what libpq would misread. Pure: a string in, its parts (or a refusal) out.

    URL        postgresql://[user[:password]@][host][:port][,host...][/dbname][?key=value&...]
               (`postgres://` too; the scheme in any case, written lowercase for libpq, which takes no other).
               libpq takes the text before the first `@` for the user and password only when no `/` comes
               before it. A password with an unencoded `/` or `@` (`ci:pa/ss@db`, `ci:p@ss@db`) is read
               as a host, a port or a database name: libpq fails on it and its message shows that part.
               An `@` in the host or the database name is therefore refused, and so is a `%` not followed
               by two hex digits in the user or password (libpq's message echoes that token), with the
               hint to percent-encode. A `?` or `#` in the password libpq reads as written: taken.
    keywords   host=db port=5432 dbname=ci user=ci password='p w'   (what psql takes: the string starts
               with one of libpq's keywords and `=`; a value in single quotes may hold spaces, `\\'` and
               `\\\\`). A string that does not split into such pairs is refused without being echoed.
    secrets    the URL's password, and the `password` and `sslpassword` parameters or keywords: never
               shown; `secrets()` lists them (as written and as meant) to blot from a driver's message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

SCHEMES = ("postgresql", "postgres")
SECRET_KEYWORDS = frozenset({"password", "sslpassword"})
# libpq's connection keywords (PQconndefaults; `requiressl` is an old spelling it still takes)
KEYWORDS = frozenset(
    {
        *SECRET_KEYWORDS,
        *("host", "hostaddr", "port", "dbname", "user", "passfile", "channel_binding", "connect_timeout"),
        *("client_encoding", "options", "application_name", "fallback_application_name", "keepalives"),
        *("keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout", "replication"),
        *("gssencmode", "sslmode", "sslnegotiation", "sslcompression", "sslcert", "sslkey", "sslcertmode"),
        *("sslrootcert", "sslcrl", "sslcrldir", "sslsni", "requirepeer", "ssl_min_protocol_version"),
        *("ssl_max_protocol_version", "krbsrvname", "gsslib", "gssdelegation", "service", "target_session_attrs"),
        *("load_balance_hosts", "require_auth", "requiressl", "scram_client_key", "scram_server_key"),
    }
)
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)
_FIRST_KEYWORD = re.compile(r"^\s*([A-Za-z_]+)\s*=")
_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|(?:[^\s'\\]|\\.)+|(?=\s|$))", re.DOTALL)
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
PERCENT_HINT = (
    "percent-encode the user and password in the URL (`/` as %2F, `@` as %40, `%` as %25), or leave the "
    "password out of it and set $PGPASSWORD or ~/.pgpass"
)


KEYWORD_HINT = "write `keyword=value` pairs separated by spaces, a value with spaces in single quotes"


class Refused(ValueError):
    """A connection string libpq would misread: why, how to name the database in the message, the fix."""

    def __init__(self, why: str, shown: str, hint: str = PERCENT_HINT) -> None:
        super().__init__(why)
        self.why, self.shown, self.hint = why, shown, hint


@dataclass(frozen=True)
class Conninfo:
    """A connection string's parts: what libpq is given, how messages name it, and the secrets it holds."""

    for_libpq: str
    shown: str
    secrets: tuple[str, ...]


def is_postgres(text: str) -> bool:
    """Whether `text` names a PostgreSQL database: a postgresql:// (or postgres://) URL, in any case, or
    libpq's keyword form (it starts with one of libpq's keywords and `=`)."""
    url = _URL.match(text)
    if url:
        return url.group(1).lower() in SCHEMES
    keyword = _FIRST_KEYWORD.match(text)
    return keyword is not None and keyword.group(1) in KEYWORDS


def parse(text: str) -> Conninfo:
    """The parts of a connection string `is_postgres` took (see the module docstring); Refused otherwise."""
    url = _URL.match(text)
    if url:
        return _parse_url(url.group(1).lower(), url.group(2))
    return _parse_keywords(text)


def _parse_url(scheme: str, rest: str) -> Conninfo:
    at, slash = rest.find("@"), rest.find("/")
    has_credentials = at >= 0 and (slash < 0 or at < slash)  # libpq's rule
    credentials, after = (rest[:at], rest[at + 1 :]) if has_credentials else ("", rest)
    user, colon, password = credentials.partition(":")
    place, question, query = after.partition("?")
    if "@" in place:
        raise Refused(
            "expected a URL whose user and password have `/` and `@` percent-encoded, found an `@` that libpq "
            "would read as part of the host or the database name",
            _guessed(scheme, rest),
        )
    if _BAD_PERCENT.search(credentials):
        raise Refused(
            "expected a URL whose user and password are percent-encoded, found a `%` not followed by two hex "
            "digits (libpq refuses it and shows it)",
            f"{scheme}://{_kept_user(user)}{place}",
        )
    items = [item for item in query.split("&") if item] if question else []
    if any("=" not in item for item in items):
        raise Refused(
            "expected `key=value` parameters after `?`, found one without `=` (libpq refuses it and shows it)",
            f"{scheme}://{_kept_user(user)}{place}",
        )
    kept = [item for item in items if unquote(item.partition("=")[0]) not in SECRET_KEYWORDS]
    shown = f"{scheme}://{_kept_user(user)}{place}" + (f"?{'&'.join(kept)}" if kept else "")
    secrets = [password, unquote(password), unquote(password).strip()] if colon and password else []
    for item in items:  # (the driver reads a URL's values with their outer spaces taken off)
        key, _, value = item.partition("=")
        if unquote(key) in SECRET_KEYWORDS and value:
            secrets += [value, unquote(value), unquote(value).strip()]
    return Conninfo(f"{scheme}://{rest}", shown, _unique(secrets))


def _kept_user(user: str) -> str:
    return f"{user}@" if user else ""


def _guessed(scheme: str, rest: str) -> str:
    """A refused URL, named without anything between its first `:` and its last `@` (the password is there
    wherever its writer meant it to end), and without its parameters."""
    head, _, tail = rest.rpartition("@")
    user = re.match(r"[^:@/?]*", head)
    shown_user = user.group(0) if user and user.end() < len(head) and head[user.end()] == ":" else ""
    place = tail.partition("?")[0]
    return f"{scheme}://{shown_user}:***@{place}" if shown_user else f"{scheme}://***@{place}"


def _parse_keywords(text: str) -> Conninfo:
    position, pairs = 0, list[tuple[str, str]]()
    while text[position:].strip():
        pair = _PAIR.match(text, position)
        if pair is None or pair.group(1) not in KEYWORDS:
            shown = " ".join(f"{key}={value}" for key, value in pairs if key not in SECRET_KEYWORDS)
            raise Refused(
                f"expected libpq's `keyword=value` pairs (keywords such as host, port, dbname, user), found text "
                f"that is not one after {len(pairs)} pair(s) (not shown: it may hold a password)",
                shown or "a PostgreSQL connection string",
                KEYWORD_HINT,
            )
        pairs.append((pair.group(1), pair.group(2)))
        position = pair.end()
    shown = " ".join(f"{key}={value}" for key, value in pairs if key not in SECRET_KEYWORDS)
    secrets = [found for key, value in pairs if key in SECRET_KEYWORDS and value for found in (value, _unquoted(value))]
    return Conninfo(text, shown, _unique(secrets))


def _unquoted(value: str) -> str:
    """A keyword's value as libpq means it: quotes taken off, `\\x` read as x."""
    inner = value[1:-1] if value.startswith("'") else value
    return re.sub(r"\\(.)", r"\1", inner, flags=re.DOTALL)


def _unique(found: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(value for value in found if value))
