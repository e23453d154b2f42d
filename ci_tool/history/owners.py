"""Who owns a running run, and the sweep that closes the runs whose owner died.

A run is recorded `running` when it starts and closed when it ends; a ci-tool that is SIGKILLed (by CI,
the OOM killer, a test that kills its parent), whose disk filled up, or whose lock wait was interrupted
never closes it. So each run records its owner: the host, the pid and the process's start (the boot id,
the pid namespace and the start time in clock ticks, from /proc: a pid used again by another process,
or a container's pid, is not taken for the owner). Every open of the history for writing sweeps:

    this boot and pid namespace   a `running` run whose owner pid is gone, a zombie, or another process
                                  now (another start time): interrupted
    this host, an earlier boot    interrupted: nothing of that boot still runs
    other hosts, other pid        their processes cannot be seen from here: interrupted only once started
    namespaces (containers)       more than FOREIGN_STALE_SECONDS ago (three days, longer than a whole
                                  pipeline of our catalog runs on one machine)
    no owner                      runs recorded before owners were (schema version 6): by age, as above

A swept run's `finished_at` is the last time it was heard of (its newest test result, else its start).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tool.outcomes import RunState

if TYPE_CHECKING:  # the store sweeps as it opens
    from ci_tool.history.backend import Writer
    from ci_tool.history.store import HistoryStore

FOREIGN_STALE_SECONDS = 3 * 86_400.0
_PROC = Path("/proc")


@dataclass(frozen=True)
class Owner:
    host: str  # the run's host column
    pid: int
    start: str  # `<boot id>|<pid namespace>|<start ticks>`; "" where /proc cannot tell (the pid alone decides)


def this_process() -> Owner:
    pid = os.getpid()
    ticks = _start_ticks(pid)
    return Owner(socket.gethostname(), pid, f"{_place()}|{ticks}" if ticks is not None else "")


def _place() -> str:
    """`<boot id>|<pid namespace>`: where a pid means the same process (a container on this host with the
    same host name has its own pids; after a reboot every pid is another)."""
    try:
        return f"{(_PROC / 'sys/kernel/random/boot_id').read_text().strip()}|{os.readlink(_PROC / 'self/ns/pid')}"
    except OSError:
        return ""


def _start_ticks(pid: int) -> str | None:
    """When a live process started (clock ticks since boot); None where /proc has no answer or it is a zombie."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if not fields or fields[0] == "Z":  # a zombie has died; only its exit status is left to collect
        return None
    return fields[19]  # field 22 of stat; fields[0] is field 3


def is_stale(owner: Owner | None, *, started_at: float, now: float) -> bool:
    """Whether a `running` run with this owner has died (see the module docstring). The boot id and pid
    namespace say whether the owner's pid can be looked at from here; the host column (the run's) says
    whether a run of another boot was this host's."""
    old = now - started_at > FOREIGN_STALE_SECONDS
    if owner is None:
        return old
    this_host = owner.host == socket.gethostname()
    if not owner.start:  # recorded without /proc (another OS): the pid existing is all we can know
        return not _pid_exists(owner.pid) if this_host else old
    place, _, ticks = owner.start.rpartition("|")
    here = _place()
    if place == here:
        return not _pid_exists(owner.pid) or _start_ticks(owner.pid) != ticks
    if place.split("|")[0] == here.split("|")[0]:  # this boot, another pid namespace (a container)
        return old
    return True if this_host else old  # this host before its last boot: nothing of that boot still runs


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    return True


_RUNNING = "SELECT run_id, host, owner_pid, owner_start, started_at FROM runs WHERE state = ?"


def sweep_stale_runs(store: HistoryStore, *, now: float | None = None) -> list[str]:
    """Mark the `running` runs whose owner died interrupted (see the module docstring); their ids.
    A row the sweep cannot read is left as it is (the readers say what is wrong with it)."""
    from ci_tool.history import rows  # here: rows.py builds the store's records, and the store sweeps on open

    now = time.time() if now is None else now
    stale = []
    for row in store.rows(_RUNNING, (RunState.RUNNING.value,)):
        try:
            r = rows.view(store, "runs", "run_id, host, owner_pid, owner_start, started_at", row).keyed(run_id="run id")
            pid = None if r.raw("owner_pid") is None else r.count("owner_pid")
            owner = Owner(r.text("host"), pid, r.text("owner_start")) if pid is not None else None
            started_at = r.timestamp("started_at")
        except rows.BadRowError:
            continue
        if is_stale(owner, started_at=started_at, now=now):
            stale.append(r.key_text("run_id"))
    if stale:
        store.write(lambda db: _close(db, stale))
    return stale


def _close(db: Writer, run_ids: list[str]) -> None:
    for run_id in run_ids:  # `state = running` again, under the lock: the owner may have closed it meanwhile
        db.execute(
            "UPDATE runs SET state = ?, finished_at = coalesce((SELECT max(recorded_at) FROM test_results "
            "WHERE run_id = ?), started_at) WHERE run_id = ? AND state = ?",
            (RunState.INTERRUPTED.value, run_id, run_id, RunState.RUNNING.value),
        )
