"""Failure signatures: which failures are "the same failure", and the lines of output worth showing.

    signature := exception type ": " normalized first line of the message

Normalizing replaces what differs between two occurrences of one bug, in this order:

    pytest and system temporary paths  /tmp/pytest-of-u/pytest-3/test_a0/x, /tmp/tmpab12/y  -> <tmp>
    other absolute or dotted paths      /home/u/repo/a.py, src/kvengine/pool.py            -> <path>
    hex addresses and long hex ids      0x7f3a2c, 3f2a9c1e5b7d                             -> <hex>
    numbers (with a decimal part, sign)  17, -2.5, 1e-3                                     -> <n>

so `IndexError: block 17 at 0x11000 is out of range for pool /tmp/pool-17/kv` and the same with 4242
share one signature. A failure without a message line gets the type alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TMP = re.compile(r"(?:/private)?/(?:tmp|var/folders|var/tmp)/\S*|\b[A-Za-z]:\\[^\s]*\\Temp\\\S*")
_PATH = re.compile(r"(?<![\w<])(?:/[\w.@+~-]+){2,}/?|\b[\w.-]+(?:/[\w.-]+)+\.\w+\b")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
_NUMBER = re.compile(r"(?<![\w<])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SPACES = re.compile(r"\s+")
_TYPE_PREFIX = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failed|Failure|Timeout)?):\s*")
_E_LINE = re.compile(r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Failed))(?::\s*(.*))?$")
_BANNER = re.compile(r"([-+=~_])\1{2,}.*\1{3,}|([-+=~_])\2{2,}")
MAX_MESSAGE_CHARS = 200


@dataclass(frozen=True)
class Signature:
    exception: str
    message: str  # normalized

    def __str__(self) -> str:
        return f"{self.exception}: {self.message}" if self.message else self.exception


def normalize(message: str) -> str:
    """The message with temporary paths, paths, addresses and numbers replaced (see the module doc)."""
    text = _TMP.sub("<tmp>", message)
    text = _PATH.sub("<path>", text)
    text = _HEX.sub("<hex>", text)
    text = _NUMBER.sub("<n>", text)
    text = _SPACES.sub(" ", text).strip()
    return text[:MAX_MESSAGE_CHARS]


def failure_signature(kind: str, message: str, text: str = "") -> Signature:
    """The signature of a failure from its type (may be empty), one-line message and full report."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    prefix = _TYPE_PREFIX.match(first)
    exception = kind
    if prefix and (not kind or prefix.group(1).rsplit(".", 1)[-1] == kind.rsplit(".", 1)[-1]):
        exception, first = prefix.group(1), first[prefix.end() :]
    if not exception:
        exception, found = _from_report(text)
        first = first or found
    return Signature(exception or "Failure", normalize(first))


def _from_report(text: str) -> tuple[str, str]:
    """The last `E   SomeError: message` line of a pytest failure report."""
    for line in reversed(text.splitlines()):
        match = _E_LINE.match(line.strip())
        if match:
            return match.group(1), match.group(2) or ""
    return "", ""


def failure_excerpt(text: str, *, max_lines: int = 8) -> str:
    """The lines of a failure report worth reading first: pytest's `E` lines and the location after
    them when there are any, else the last lines (separator banners such as `+++ Timeout +++` dropped)."""
    lines = [line for line in text.rstrip().splitlines() if line.strip()]
    marked = [index for index, line in enumerate(lines) if line.startswith("E ")]
    if marked:
        return "\n".join(lines[marked[0] : min(marked[-1] + 2, len(lines))][:max_lines])
    kept = [line for line in lines if not _BANNER.fullmatch(line.strip())]
    return "\n".join(kept[-max_lines:])
