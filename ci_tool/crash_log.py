"""Where the traceback of an "unexpected error" (a bug of ours) goes: `.ci-tool/crash/` under the working
directory, the newest CRASH_LOGS_KEPT kept, so that crashes never pile up (in $TMPDIR or anywhere else).
Where that folder cannot be written (a read-only checkout), one file in the temporary folder, replaced by
the next crash."""

from __future__ import annotations

import datetime
import os
import tempfile
import traceback
from pathlib import Path

from ci_tool.layout import CRASH_DIR, CRASH_LOGS_KEPT

_FALLBACK_NAME = "ci-tool-crash.log"


def write_crash_log() -> Path:
    """Write the traceback being handled to a crash log and return its path (the oldest logs beyond the cap
    are removed)."""
    text = traceback.format_exc()
    moment = datetime.datetime.now(datetime.UTC)
    path = CRASH_DIR / f"crash-{moment:%Y%m%d-%H%M%S-%f}-{os.getpid()}.log"
    try:
        CRASH_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError:
        path = Path(tempfile.gettempdir()) / _FALLBACK_NAME
        path.write_text(text, encoding="utf-8")
        return path
    for old in sorted(CRASH_DIR.glob("crash-*.log"))[:-CRASH_LOGS_KEPT]:
        old.unlink(missing_ok=True)  # another ci-tool may prune the same one
    return path
