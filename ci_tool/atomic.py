"""Atomic file writes: a reader never sees a half-written file, and a failed write leaves the old one."""

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
