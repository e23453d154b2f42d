"""No process a stage's tests started outlives the stage: not even one that left the test's group (`setsid`).

    ci-tool (child subreaper) ── pytest ── a test ── setsid daemon (its own session: killpg misses it)

While a pytest process runs, ci-tool is the *child subreaper* of what it starts (Linux `prctl(
PR_SET_CHILD_SUBREAPER)`): a process whose parent ends (the double fork of a daemon) becomes ci-tool's child
instead of init's, so it stays findable. When the pytest process has ended (its group killed, process.py),
`reap_descendants` SIGKILLs and reaps every process that became ci-tool's child since the stage process
started, with all of their descendants, until none is left; only then does the runner read the results and
write the stage's (and a Slurm job's) result file, so no test process can touch it afterwards.

A child ci-tool had before (another of its own, a test session's server when ci-tool runs inside a test) is
spared. Elsewhere than Linux there is no subreaper: only the group is killed (process.py), as before.

For as long, ci-tool is undumpable (`PR_SET_DUMPABLE` 0): a test running as the same user cannot read its
parent's environment (the history's location and password, /proc/<pid>/environ) or memory.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterator
from pathlib import Path

from ci_tool.run.prctl import PRCTL

_PR_GET_DUMPABLE = 3  # <linux/prctl.h>
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
_PROC = Path("/proc")
MAX_ROUNDS = 100  # each round kills what it finds; a daemon that forks as it dies is found in the next




def supported() -> bool:
    """Whether this system keeps orphans findable (Linux, with /proc)."""
    return PRCTL is not None and _PROC.is_dir()


@contextlib.contextmanager
def subreaper() -> Iterator[frozenset[int]]:
    """This process as the child subreaper, and undumpable, for the block (as it was after); yields the
    children it had before, which `reap_descendants` spares."""
    prctl = PRCTL
    if not supported() or prctl is None:
        yield frozenset()
        return
    was = ctypes.c_int(0)
    prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0)
    dumpable = prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
    before = frozenset(_children(os.getpid()))
    prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    try:
        yield before
    finally:
        prctl(_PR_SET_CHILD_SUBREAPER, was.value, 0, 0, 0)
        if dumpable > 0:
            prctl(_PR_SET_DUMPABLE, dumpable, 0, 0, 0)


def dumpable() -> bool | None:
    """Whether this process is dumpable (None where that cannot be asked)."""
    prctl = PRCTL
    return None if prctl is None else prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) > 0


def reap_descendants(spared: frozenset[int]) -> int:
    """SIGKILL and reap every child of this process not in `spared`, and every descendant of those, until
    none is left; how many were killed. Call it inside `subreaper()` once the stage's process ended."""
    if not supported():
        return 0
    killed = 0
    for _ in range(MAX_ROUNDS):
        children = [pid for pid in _children(os.getpid()) if pid not in spared]
        if not children:
            break
        tree = [pid for child in children for pid in _tree(child)]
        for pid in tree:  # parents first: none forks a new child after its own turn
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += len(tree)
        for child in children:  # ours now: reaped here, or each would stay a zombie
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child, 0)
    return killed


def _tree(root: int) -> list[int]:
    """`root` and its descendants, parents before their children."""
    parents = _parents()
    found, index = [root], 0
    while index < len(found):
        found += [pid for pid, parent in parents.items() if parent == found[index]]
        index += 1
    return found


def _children(pid: int) -> list[int]:
    return [child for child, parent in _parents().items() if parent == pid]


def _parents() -> dict[int, int]:
    """Every process's parent pid, from /proc (a process that ends while it is read is left out)."""
    parents: dict[int, int] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        # `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so read after the last ')'
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            parents[int(entry.name)] = int(fields[1])
    return parents
