"""Writing files: atomically (a reader never sees a half-written file, a failed write leaves the old one),
atomically and only where no file is (`write_text_new`: a proposal never replaces the user's file), or
appending in one write; making the folders they go in.

An atomically written file keeps the mode of the file it replaces; a new file gets the umask's default
(0o666 & ~umask), as `open(path, "w")` would give it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from ci_tool.errors import CiToolError

_NEW_FILE_MODE = 0o666  # the kernel takes the umask off, as for any new file


class WriteError(CiToolError):
    """A file that could not be written; `errno` says why (ENOSPC: the disk is full, EROFS: read-only)."""

    def __init__(self, message: str, *, errno: int | None, strerror: str) -> None:
        super().__init__(message)
        self.errno = errno
        self.strerror = strerror


def write_text_atomically(path: str | Path, text: str, *, what: str = "the file", mode: int | None = None) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path` (`mode`: see below)."""
    write_bytes_atomically(path, text.encode("utf-8"), what=what, mode=mode)


def write_bytes_atomically(path: str | Path, data: bytes, *, what: str = "the file", mode: int | None = None) -> None:
    """Write `data` to a temporary file beside `path`, then rename it over `path`. `mode` (0o600 for a
    secret) is set before anything is written; without it the file keeps the mode of the one it replaces."""
    target = Path(path)
    temporary = None
    try:
        fd, temporary = _create_temporary(target)
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.fchmod(handle.fileno(), os.stat(target).st_mode & 0o7777)
            handle.write(data)
        os.replace(temporary, target)
    except OSError as error:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise _not_written(what, target, error) from None


def _not_written(what: str, target: Path, error: OSError) -> WriteError:
    strerror = error.strerror or str(error)
    return WriteError(f"cannot write {what} to {str(target)!r}: {strerror}", errno=error.errno, strerror=strerror)


def write_text_new(path: str | Path, text: str, *, what: str = "the file", hint: str | None = None) -> None:
    """Write `text` to `path` atomically, refusing when a file (or anything else) is already there: the
    complete file is linked into place, and the link fails rather than replace what another process or
    the user put there meanwhile."""
    target = Path(path)
    refuse_existing(target, what=what, hint=hint)
    temporary = None
    try:
        fd, temporary = _create_temporary(target)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        os.link(temporary, target)
    except FileExistsError:
        raise _taken(target, what, hint) from None
    except OSError as error:
        raise _not_written(what, target, error) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def refuse_existing(path: str | Path, *, what: str = "the file", hint: str | None = None) -> None:
    """Raise when something is at `path` (before work whose result `write_text_new` will put there)."""
    if os.path.lexists(path):
        raise _taken(Path(path), what, hint)


def _taken(target: Path, what: str, hint: str | None) -> CiToolError:
    return CiToolError(
        f"expected no file at {str(target)!r} for {what}, found one; it is left as it is",
        hint=hint or "pass another path, or move that file away first",
    )


def make_folder(folder: str | Path, *, what: str = "the folder") -> None:
    """`folder` and its parents, where they are missing (a file in the way is an error, not a crash)."""
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CiToolError(f"cannot make {what} {str(folder)!r}: a file is in the way") from None
    except OSError as error:
        raise CiToolError(f"cannot make {what} {str(folder)!r}: {error.strerror}") from None


def _create_temporary(target: Path) -> tuple[int, Path]:
    """A new file beside `target`, created with the umask's mode (mkstemp would make it 0o600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        temporary = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        with contextlib.suppress(FileExistsError):
            return os.open(temporary, flags, _NEW_FILE_MODE), temporary


def append_text(path: str | Path, text: str, *, what: str = "the file") -> None:
    """Append `text` to `path` in one write (a file others append to as well, such as $GITHUB_OUTPUT)."""
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as error:
        raise CiToolError(f"cannot append {what} to {str(path)!r}: {error.strerror}") from None
