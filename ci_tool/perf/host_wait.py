"""How long the measuring thread waited for a CPU while it measured: the host's share of a wall-clock slowdown.

Linux counts, per thread, the time it was runnable but waited on a run queue (/proc/thread-self/schedstat, its
second field, in ns). A decode step's host side (scheduling, block tables, launches) runs on the measuring
thread; on a host whose cores are all busy that thread waits for a CPU, and the case's throughput and latencies
fall with no change in the code, while the device's own step time (bandwidth_fraction) does not move. The gate
reads this share to tell the two apart (gate.py). None where the kernel keeps no such count.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCHEDSTAT = Path("/proc/thread-self/schedstat")


def run_queue_wait_ns(schedstat: Path = SCHEDSTAT) -> int | None:
    """The calling thread's time runnable but not running, in ns, since it started (None: not counted here)."""
    try:
        fields = schedstat.read_text(encoding="ascii").split()
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


@dataclass
class WaitShare:
    """Filled when its `measuring()` block ends: the share of the block's wall time spent waiting for a CPU."""

    fraction: float | None = None


@contextmanager
def measuring(schedstat: Path = SCHEDSTAT) -> Iterator[WaitShare]:
    """The calling thread's run-queue wait over the block, as a share of its wall time (None: not counted)."""
    share = WaitShare()
    waited, began = run_queue_wait_ns(schedstat), time.perf_counter_ns()
    yield share
    now, elapsed = run_queue_wait_ns(schedstat), time.perf_counter_ns() - began
    if waited is not None and now is not None and elapsed > 0:
        share.fraction = min(1.0, max(0.0, (now - waited) / elapsed))
