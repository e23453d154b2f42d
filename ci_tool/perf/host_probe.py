"""The host's speed while a case measures: a fixed pure-Python loop's time, taken around each round.

A decode step's host side (scheduling, block tables, launches) runs on the measuring thread. On a shared GPU host
that thread's core can run at half its speed for seconds at a time with no change in the code and nothing waiting
on a run queue (hypervisor steal, a busy hyperthread sibling, a lower clock): on an H100 host a loop like this one
(2M iterations) took 63-70 ms in most processes and 110-150 ms in others, and the step's wall time rose by the
host's part alone while the device's step did not move (docs/PERF.md, "A slow mode of the host"). The loop is the
same work every time, so its time measures the host, never the code; the baselines keep its time when they were
set (a reference metric), and the gate compares a run's with it (busy_host.py).
"""

from __future__ import annotations

import time

PROBE_ITERATIONS = 500_000  # about 16 ms on a fast host core: short beside a round, long beside timer noise


def probe_ms(iterations: int = PROBE_ITERATIONS) -> float:
    """The wall time of a fixed CPU-bound loop on this thread, in ms."""
    began = time.perf_counter()
    total = 0
    for i in range(iterations):
        total += i & 7
    return (time.perf_counter() - began) * 1000
