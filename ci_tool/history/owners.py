"""Who owns a running run, and the sweep that closes the runs whose owner died.

A run is recorded `running` when it starts and closed when it ends; a ci-tool that is SIGKILLed (by CI,
the OOM killer, a test that kills its parent), whose disk filled up, or whose lock wait was interrupted
never closes it. So each run records its owner: the host, the pid and the process's start (the machine id,
the boot id, the pid namespace and the start time in clock ticks, from /etc/machine-id and /proc: a pid
used again by another process, or a container's pid, is not taken for the owner). The host name alone
does not say which machine a run is on: two runners may share one (cloned images, a default name), and
one's sweep must not close the other's live run. Every open of the history for writing sweeps:

    this boot and pid namespace   a `running` run whose owner pid is gone, a zombie, or another process
                                  now (another start time): interrupted
    this boot, another pid        its processes cannot be seen from here: interrupted only once started
    namespace (a container)       more than FOREIGN_STALE_SECONDS ago (three days, longer than a whole
                                  pipeline of our catalog runs on one machine)
    this machine, an earlier      interrupted: nothing of that boot still runs. This machine: the same host
    boot                          name and machine id (or neither knows one); an earlier boot: the run
                                  started before this boot did (a machine cloned with our id and name that
                                  started a run since is another machine)
    another machine               by age, as above (another machine id, or another host name)
    rows without a machine id     (recorded before it was): this host name, another boot: interrupted;
                                  other hosts by age, as above
    no owner                      runs recorded before owners were (schema version 6): by age, as above

A swept run's `finished_at` is the last time it was heard of (its newest test result, else its start).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from ci_tool.history import rows
from ci_tool.history.backend import StoreView, Writer
from ci_tool.outcomes import RunState

FOREIGN_STALE_SECONDS = 3 * 86_400.0
_PROC = Path("/proc")
_MACHINE_ID_FILES = (Path("/etc/machine-id"), Path("/var/lib/dbus/machine-id"))


@dataclass(frozen=True)
class Owner:
    host: str  # the run's host column
    pid: int
    # `<machine id>|<boot id>|<pid namespace>|<start ticks>` ("<boot id>|<pid namespace>|<start ticks>" in
    # rows recorded before the machine id was); "" where /proc cannot tell (the pid alone decides)
    start: str


def this_process() -> Owner:
    pid = os.getpid()
    ticks = _start_ticks(pid)
    return Owner(socket.gethostname(), pid, f"{_machine_id()}|{_place() or '|'}|{ticks}" if ticks is not None else "")


def _machine_id() -> str:
    """This machine's id (systemd's /etc/machine-id), "" where it has none; never holds "|"."""
    for path in _MACHINE_ID_FILES:
        try:
            return path.read_text().strip().replace("|", "")
        except (OSError, UnicodeDecodeError):
            continue
    return ""


def _boot_time() -> float | None:
    """When this boot began (seconds since the epoch, /proc/stat's btime); None where /proc cannot tell."""
    try:
        for line in (_PROC / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


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
    namespace say whether the owner's pid can be looked at from here; the host name and the machine id (the
    run's) whether a run of another boot was this machine's."""
    old = now - started_at > FOREIGN_STALE_SECONDS
    if owner is None:
        return old
    this_host = owner.host == socket.gethostname()
    if not owner.start:  # recorded without /proc (another OS): the pid existing is all we can know
        return not _pid_exists(owner.pid) if this_host else old
    fields = owner.start.split("|")
    machine = fields.pop(0) if len(fields) == 4 else None  # None: recorded before the machine id was
    boot, ticks = fields[0], fields[-1]
    here = _place() or "|"  # as this_process writes an unknown place
    if "|".join(fields[:-1]) == here:
        return not _pid_exists(owner.pid) or _start_ticks(owner.pid) != ticks
    if boot == here.split("|")[0]:  # this boot, another pid namespace (a container)
        return old
    if not this_host or (machine is not None and machine != _machine_id()):
        return old  # another machine: its processes cannot be seen from here
    if machine is None:  # an old row: the host name is all it says of the machine
        return True
    booted = _boot_time()  # the same name and id: an earlier boot of this machine, or a clone of it
    return old if booted is None else started_at < booted or old


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    return True


_RUNNING = "SELECT run_id, host, owner_pid, owner_start, started_at FROM runs WHERE state = ?"


def sweep_stale_runs(store: StoreView, *, now: float | None = None) -> list[str]:
    """Mark the `running` runs whose owner died interrupted (see the module docstring); their ids.
    A row the sweep cannot read is left as it is (the readers say what is wrong with it)."""
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
