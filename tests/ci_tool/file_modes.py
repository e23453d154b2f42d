"""Run a child process where file modes bind, as root too, so that tests of read-only files and folders run
on every host (the CI host runs as root; developers do not).

    where_modes_bind(command)   `command` as it is for an ordinary user; for root, under util-linux's
                                setpriv without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, the capabilities
                                that let root write and search through any mode

The child stays uid 0 and owns the same files, so it still reaches the test's temporary folder (mode 0700)
and the virtual environment; only the override is gone. setpriv drops the two from the bounding set, which
root's execve takes its capabilities from; dropping needs CAP_SETPCAP, which root has and others do not
need.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

DROPPED_CAPABILITIES = "-dac_override,-dac_read_search"
TIMEOUT_SECONDS = 300  # a ci-tool start on a loaded 2-core machine takes seconds, not minutes


def where_modes_bind(command: Sequence[str]) -> list[str]:
    """`command`, run so that the file modes it meets bind it (see the module docstring)."""
    if os.geteuid() != 0:
        return list(command)
    return ["setpriv", "--bounding-set", DROPPED_CAPABILITIES, "--", *command]


def ci_tool_where_modes_bind(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`ci-tool ARGV` in `cwd`, in a child where file modes bind."""
    command = where_modes_bind([sys.executable, "-m", "ci_tool", *argv])
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, timeout=TIMEOUT_SECONDS)
