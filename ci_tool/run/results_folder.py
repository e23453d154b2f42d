"""A results folder that fills up or turns read-only while a run writes it: what finished is kept anyway.

A write refused for lack of room or of permission (REFUSALS: ENOSPC, EDQUOT, EROFS, EACCES, EPERM) stops
the stage; its results, which ci-tool holds in memory, go to the history as always and its files
(junit.xml, result.json, the run's report.md) to the first fallback folder that takes them:

    $XDG_STATE_HOME/ci-tool/results/<run id>/<stage>/   ($XDG_STATE_HOME: ~/.local/state by default)
    <system temp dir>/ci-tool-results/<run id>/<stage>/

and the stage says so in one line: `results folder X is not writable (No space left on device); results
kept in Y`. A pytest process that dies of such a write (its JUnit, events or log) cannot say why: when
one ends before its session does, ci-tool asks the folder itself (`refusal`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tool.atomic import WriteError, make_folder, write_text_atomically
from ci_tool.errors import CiToolError

REFUSALS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})
PROBE_BYTES = 64 * 1024  # what a probe writes: about what a pytest process writes after a test


class FolderRefused(Exception):
    """A write into the results folder was refused (see REFUSALS); `strerror` says why."""

    def __init__(self, strerror: str) -> None:
        super().__init__(strerror)
        self.strerror = strerror


def refused(error: OSError | WriteError) -> str | None:
    """The reason when `error` is a refusal of the folder (full, read-only, not permitted), else None."""
    if error.errno in REFUSALS:
        return error.strerror or os.strerror(error.errno or 0)
    return None


def refusal(folder: Path) -> str | None:
    """Why `folder` takes no more files now (`No space left on device`), or None when it does: a probe
    file is written, synced and removed."""
    probe = folder / f".ci-tool-probe-{secrets.token_hex(4)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        return refused(error)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return None


def fallback_roots(environ: Mapping[str, str] = os.environ) -> list[Path]:
    """Where results go when their folder refuses them, in order (see the module docstring). A relative
    $XDG_STATE_HOME is ignored, as the XDG base directory specification says."""
    state = Path(environ.get("XDG_STATE_HOME", ""))
    home = environ.get("HOME", "")
    roots = [state] if state.is_absolute() else [Path(home) / ".local" / "state"] if home else []
    return [*(root / "ci-tool" / "results" for root in roots), Path(tempfile.gettempdir()) / "ci-tool-results"]


@dataclass(frozen=True)
class Kept:
    """Where files refused by `folder` went instead (None: nowhere would take them) and the line saying so."""

    folder: Path
    why: str  # the refusal: `No space left on device`
    kept_in: Path | None
    line: str


def kept_line(folder: Path, why: str, kept_in: Path | None, *, what: str = "results", failed: str = "") -> str:
    """`results folder X is not writable (WHY); results kept in Y` (or only in the history)."""
    head = f"results folder {folder} is not writable ({why})"
    if kept_in is not None:
        return f"{head}; {what} kept in {kept_in}"
    return f"{head}; {what} kept only in the history (no fallback folder took them: {failed})"


def write_results(
    folder: Path,
    files: Callable[[str], Mapping[str, str]],
    *,
    run_id: str,
    stage: str,
    why: str | None = None,
    what: str = "results",
    environ: Mapping[str, str] = os.environ,
) -> Kept | None:
    """Write the files `files(line)` gives into `folder` (None returned), or, when the folder refuses them
    (or refused earlier: `why`), into the first fallback folder that takes them. `line` is "" for the
    results folder itself, else the kept line, which the files may carry (result.json's reason)."""
    if why is None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _write_all(folder, files(""))
            return None
        except (OSError, WriteError) as error:
            why = refused(error)
            if why is None:
                raise
    failed = ""
    for root in fallback_roots(environ):
        place = root / run_id / stage if stage else root / run_id
        line = kept_line(folder, why, place, what=what)
        try:
            make_folder(place, what="the fallback results folder")
            _write_all(place, files(line))
        except CiToolError as error:
            failed = str(error)
            continue
        return Kept(folder, why, place, line)
    return Kept(folder, why, None, kept_line(folder, why, None, what=what, failed=failed))


def _write_all(folder: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        write_text_atomically(folder / name, text, what=f"the stage's {name}")
