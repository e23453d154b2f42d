"""The one place that decides how a service URL is shown: never with the `user:token@` people put in it.

A Jenkins URL such as `https://bot:TOKEN@jenkins.example.com/` works in a browser, so it ends up in
CI_TOOL_JENKINS_URL by habit. The client takes the userinfo out (as credentials, where none were given
apart) and every reply, status link, ledger row, log line and error message is built from `shown(url)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit, urlunsplit


@dataclass(frozen=True)
class SplitUrl:
    """A URL without its userinfo, and the user and password that were in it (None when absent)."""

    url: str
    user: str | None
    password: str | None


def split_userinfo(url: str) -> SplitUrl:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return SplitUrl(url, None, None)
    userinfo, _, host = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    return SplitUrl(
        urlunsplit(parts._replace(netloc=host)), unquote(user) or None, unquote(password) if colon else None
    )


def shown(url: str) -> str:
    """`url` as it may be printed, posted or stored: without any userinfo."""
    return split_userinfo(url).url
