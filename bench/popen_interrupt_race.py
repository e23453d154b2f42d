"""How often a KeyboardInterrupt leaves `subprocess.Popen`'s waitpid lock held: the hang ci_tool/interrupts.py's
held signals avoid.

A child sleeps; this process polls it with `Popen.wait(timeout=0.05)`, as ci-tool's watcher polled its pytest
child, while a shell loop sends it SIGINT every 2 ms. After each KeyboardInterrupt the lock is looked at:
held means the interrupt landed between `acquire(False)` and the `try` that releases it, and the next blocking
`wait()` would never return (the lock is released here, to count on). Run it beside a CPU hog on every core:
the window is only hit when the signal arrives while the process is preempted in it.

    python3 bench/popen_interrupt_race.py [SECONDS]
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from types import FrameType

armed = [True]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    if armed[0]:  # one interrupt at a time: a second one landing in the except block below is not counted
        armed[0] = False
        raise KeyboardInterrupt


def main(seconds: float) -> None:
    signal.signal(signal.SIGINT, _interrupt)
    child = subprocess.Popen(["sleep", "100000"])
    sender = subprocess.Popen(["bash", "-c", f"while kill -INT {os.getpid()}; do sleep 0.002; done"])
    interrupts = held = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            while True:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=0.05)
        except KeyboardInterrupt:
            interrupts += 1
            if child._waitpid_lock.locked():  # type: ignore[attr-defined]
                held += 1
                child._waitpid_lock.release()  # type: ignore[attr-defined]
            armed[0] = True
    armed[0] = False
    sender.kill()
    child.kill()
    child.wait()
    print(f"{interrupts} interrupts, the waitpid lock left held after {held}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 40.0)
