"""What in a URL is a credential, so that no URL ci-tool posts or prints carries one: its userinfo
(`https://bot:TOKEN@host/`), a port that is no number (`https://bot:pa/ss@host/`: a password with an
unencoded `/` ends the authority early, and its first part reads as a port), and a query parameter whose
name says it holds a credential (`token`, `access_token`, `api_key`, `X-Amz-Signature`, Azure's `sig`, ...).
Pure: found by their names, never echoing a value.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

# words of a query parameter's name (split at `-`, `_` and `.`, any case) that say its value is a credential
_SECRET_WORDS = frozenset(
    {"token", "key", "apikey", "secret", "password", "passwd", "pwd", "sig", "signature", "auth", "authorization",
     "credential", "credentials", "session", "sessionid", "jwt", "bearer", "otp"}
)  # fmt: skip
_AUTHORITY = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://([^/?#\\]*)")
_WORDS = re.compile(r"[-_.]")


def credentials_in(url: str) -> tuple[str, ...]:
    """What in `url` holds (or may hold) a credential, each said without its value; () when nothing does."""
    found = []
    authority = _AUTHORITY.match(url)
    host = authority.group(1) if authority else ""
    if "@" in host:
        found.append("a user and password before `@`")
    elif ":" in host and not re.fullmatch(r"[^:]*:(\d*|\{[a-z_]+\})", host) and not host.startswith("["):
        found.append("a port that is not a number (a password with an unencoded `/`?)")
    query = url.partition("?")[2].partition("#")[0]
    for item in filter(None, query.split("&")):
        name = unquote(item.partition("=")[0]).lower()
        words = sorted({name} & _SECRET_WORDS or set(_WORDS.split(name)) & _SECRET_WORDS)
        if words:  # said by the word that gave it away: a name may be a pasted token itself
            found.append(f"a query parameter named `{words[0]}`")
    return tuple(dict.fromkeys(found))
