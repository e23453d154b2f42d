"""Reading a user's text file: one rule for every reader (YAML, JSON, test lists, waives, changed files).

- UTF-8 only, decoded strictly: a bad byte is an error at its line and column;
- a leading UTF-8 byte-order mark is dropped (Windows editors write one); anywhere else it is a character;
- a regular file only (a symlink followed to one): a FIFO would block the reader for ever, a device such as
  /dev/zero fill its memory; and at most MAX_BYTES: a larger file is refused instead of filling memory;
- `lines()` splits at "\\n" (and "\\r\\n") only, so a form feed or U+2028 stays inside its line, where the
  line's parser names it, instead of starting a line of its own and shifting every line number after it;
- `unprintable()` names the first character no line of input may hold (the test-line grammar and every
  YAML string the node reader hands out refuse them): a newline inside a test id would run as two entries.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

from ci_tool.errors import CiToolError, Where

BOM = "\ufeff"
MAX_BYTES = 64 * 2**20


def read_text(path: str | Path, *, name: str, error: type[CiToolError]) -> str:
    """The text of a file, or `error` (`file[:line:col]: cannot read <name>: ...`) when it has none."""
    return decode_text(read_bytes(path, name=name, error=error), file=str(path), name=name, error=error)


def read_bytes(path: str | Path, *, name: str, error: type[CiToolError]) -> bytes:
    """The bytes of a regular file of at most MAX_BYTES, or `error` (`file: cannot read <name>: ...`). Opened
    without blocking, so that a FIFO is refused instead of waiting for a writer that never comes; an OSError
    (a missing file too) is the caller's `error`, its errno kept on `__cause__`."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as problem:
        raise error(f"cannot read {name}: {problem.strerror or problem}", where=Where(str(path))) from problem
    kind = _kind(os.fstat(descriptor).st_mode)
    if kind:
        os.close(descriptor)
        raise error(f"cannot read {name}: expected a regular file, found {kind}", where=Where(str(path)))
    with os.fdopen(descriptor, "rb") as handle:
        try:
            data = handle.read(MAX_BYTES + 1)
        except OSError as problem:
            raise error(f"cannot read {name}: {problem.strerror or problem}", where=Where(str(path))) from problem
    if len(data) > MAX_BYTES:
        raise error(f"cannot read {name}: it is larger than {MAX_BYTES // 2**20} MiB", where=Where(str(path)))
    return data


def _kind(mode: int) -> str:
    """What a file that is not a regular one is ("" for a regular file)."""
    if stat.S_ISREG(mode):
        return ""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (a named pipe)"), (stat.S_ISCHR, "a character "
             "device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))  # fmt: skip
    return next((words for test, words in kinds if test(mode)), "a special file")


def decode_text(data: bytes, *, file: str, name: str, error: type[CiToolError]) -> str:
    """UTF-8 bytes as text without a leading byte-order mark; a bad byte raises `error` at its position."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as problem:
        line_start = data.rfind(b"\n", 0, problem.start) + 1
        column = len(data[line_start : problem.start].decode("utf-8", "replace")) + 1
        raise error(
            f"cannot read {name}: it is not UTF-8 text (byte 0x{data[problem.start]:02x})",
            where=Where(file, data.count(b"\n", 0, problem.start) + 1, column),
            hint="save the file as UTF-8",
        ) from None
    return text.removeprefix(BOM)


def lines(text: str) -> list[str]:
    """The lines of a text, split at "\\n" only (a trailing "\\r" dropped); no empty last line."""
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
    return [part.removesuffix("\r") for part in parts]


def unprintable(text: str) -> str | None:
    """How the first character of `text` that no line of input may hold reads in a message ('U+000A'), or None.

    Refused is every character Python does not call printable but a tab and the spaces (a no-break space
    pasted from a web page is a blank): controls such as "\n" and NUL, invisible format characters such
    as U+200B and U+FEFF, lone surrogates, line and paragraph separators, private-use and unassigned
    code points."""
    if text.isprintable():
        return None
    for char in text:
        if char != "\t" and not char.isprintable() and unicodedata.category(char) != "Zs":
            name = unicodedata.name(char, "")
            return f"U+{ord(char):04X}" + (f" ({name})" if name else "")
    return None
