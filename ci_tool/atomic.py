"""Writing files: atomically (a reader never sees a half-written file, a failed write leaves the old one),
or appending in one write."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from ci_tool.errors import CiToolError


def write_text_atomically(path: str | Path, text: str, *, what: str = "the file") -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`."""
    target = Path(path)
    temporary = None
    try:
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, target)
    except OSError as error:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise CiToolError(f"cannot write {what} to {str(target)!r}: {error.strerror}") from None


def append_text(path: str | Path, text: str, *, what: str = "the file") -> None:
    """Append `text` to `path` in one write (a file others append to as well, such as $GITHUB_OUTPUT)."""
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise CiToolError(f"cannot append {what} to {str(path)!r}: {error.strerror}") from None
