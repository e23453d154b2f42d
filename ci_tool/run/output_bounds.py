"""How much of what tests write ci-tool reads and keeps: a bounded number of characters, never "all of it".
A test that prints 1.5 GB or fails with a 2 MB message costs ci-tool (and its history) a few KiB.

    MAX_TEXT_CHARS      a failure report, a test's captured stdout or stderr, the end of a log
    MAX_LINE_CHARS      a one-line value: a failure message, a property, a collection error's line
    MAX_EXCERPT_CHARS   the lines of a failure the history keeps to show in reports
    READ_CHUNK_CHARS    what one read of a file a test can grow takes at a time

A cut text keeps its head and its tail (the end of a traceback is where the error is) and says what
went, and where the whole text is when something holds it:

    first lines ...
    … [cut 1834112 characters; full text in p01-main.log]
    ... last lines

A cut line keeps its head: `AssertionError: assert 'xxx… [cut 1999000 characters]`.

A text over its limit by no more than NOTE_ROOM characters is kept whole: a text cut once (its limit
plus its note) is never cut again when it travels on (plugin -> JUnit -> history).
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import BinaryIO

MAX_TEXT_CHARS = 64 * 1024
MAX_LINE_CHARS = 4 * 1024
MAX_EXCERPT_CHARS = 8 * 1024
READ_CHUNK_CHARS = 1024 * 1024
NOTE_ROOM = 256  # a cut note and the name of the log it points to
_HEAD_SHARE = 4  # a cut text keeps a quarter of its limit from the head, the rest from the tail


def cut_note(count: int, full_text_in: str = "") -> str:
    """`… [cut N characters; full text in LOG]`."""
    where = f"; full text in {full_text_in}" if full_text_in else ""
    return f"… [cut {count} characters{where}]"


def cut_text(text: str, limit: int = MAX_TEXT_CHARS, *, full_text_in: str = "", slack: int = NOTE_ROOM) -> str:
    """`text` when it has at most `limit` (+ `slack`) characters, else its head and tail around a cut note."""
    if len(text) <= limit + slack:
        return text
    head = limit // _HEAD_SHARE
    tail = limit - head
    return f"{text[:head]}\n{cut_note(len(text) - limit, full_text_in)}\n{text[len(text) - tail :]}"


def cut_line(text: str, limit: int = MAX_LINE_CHARS, *, slack: int = NOTE_ROOM) -> str:
    """`text` when it has at most `limit` (+ `slack`) characters, else its head and a cut note."""
    if len(text) <= limit + slack:
        return text
    return f"{text[:limit]}{cut_note(len(text) - limit)}"


class BoundedText:
    """Text appended in pieces (a parser's character data), of which only a head and a tail are kept:
    memory stays within `limit` characters however much comes. `text()` reads as `cut_text` of the whole."""

    def __init__(self, limit: int = MAX_TEXT_CHARS, *, slack: int = NOTE_ROOM) -> None:
        self.limit = limit
        self.slack = slack
        self.head_limit = limit // _HEAD_SHARE
        self.head: list[str] = []
        self.head_chars = 0
        self.tail = ""
        self.total = 0

    def add(self, piece: str) -> None:
        self.total += len(piece)
        room = self.head_limit - self.head_chars
        if room > 0:
            self.head.append(piece[:room])
            self.head_chars += min(room, len(piece))
            piece = piece[room:]
        if piece:
            kept = self.limit - self.head_limit + self.slack  # the slack: a text that fits comes back whole
            self.tail = (self.tail + piece)[-kept:] if len(self.tail) + len(piece) > kept else self.tail + piece

    def text(self, *, full_text_in: str = "") -> str:
        head = "".join(self.head)
        if self.total <= self.limit + self.slack:
            return head + self.tail
        tail = self.tail[len(self.tail) - (self.limit - self.head_limit) :]
        return f"{head}\n{cut_note(self.total - self.limit, full_text_in)}\n{tail}"


def read_tail(path: Path, limit: int = MAX_TEXT_CHARS) -> str:
    """The last `limit` characters (about) of a file, read from its end: a 1.5 GB log costs one seek.
    Undecodable bytes read as U+FFFD; a file that cannot be read reads as ""."""
    try:
        with open(path, "rb") as handle:
            return tail_of(handle, limit)[1]
    except OSError:
        return ""


def tail_of(handle: BinaryIO, limit: int = MAX_TEXT_CHARS) -> tuple[int, str]:
    """(the file's size in bytes, its last `limit` characters), read from the end of an open binary file."""
    max_bytes = limit * 4  # a UTF-8 character is at most 4 bytes
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - max_bytes))
    text = codecs.decode(handle.read(max_bytes), "utf-8", errors="replace")
    return size, text[-limit:]


def output_tail(handle: BinaryIO, limit: int = MAX_TEXT_CHARS) -> str:
    """A child's whole output when it is short, else its end after a cut note (`… [cut N bytes]`)."""
    size, text = tail_of(handle, limit)
    kept = len(text.encode("utf-8", errors="replace"))
    return text if size <= kept else f"{cut_note(size - kept).replace('characters', 'bytes')}\n{text}"
