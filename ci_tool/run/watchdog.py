"""pytest-timeout's thread method without a thread per test.

pytest-timeout's `thread` method starts (and joins) a `threading.Timer` for every test, which costs
milliseconds per test on a small machine. Its timer is a hook (`pytest_timeout_set_timer`), so the
test-list plugin answers it with one long-lived thread that watches a deadline: arming and disarming
are plain assignments, the thread wakes at least every WAKE_SECONDS, and on expiry it calls
pytest-timeout's own handler (stack dump, `+++ Timeout +++` banner, os._exit), so what a timeout
looks like does not change. The signal method is left to pytest-timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest_timeout

WAKE_SECONDS = 0.5


class TimeoutWatchdog:
    """One daemon thread for a whole session; `arm` per test, `disarm` after it."""

    def __init__(self, on_expiry: Callable[[str], None] = lambda nodeid: None) -> None:
        self._on_expiry = on_expiry  # hears the node id first: an xdist worker says which test timed out
        self._armed: tuple[float, Any, Any] | None = None  # (deadline, item, settings), swapped whole
        self._thread = threading.Thread(target=self._watch, name="ci-tool-timeout-watchdog", daemon=True)
        self._thread.start()

    def arm(self, item: Any, settings: Any) -> None:
        self._armed = (time.monotonic() + float(settings.timeout), item, settings)

    def disarm(self) -> None:
        self._armed = None

    def _watch(self) -> None:
        while True:
            armed = self._armed
            now = time.monotonic()
            if armed is None or now < armed[0]:
                time.sleep(WAKE_SECONDS if armed is None else min(WAKE_SECONDS, armed[0] - now))
                continue
            if armed is self._armed:  # still the same test: it ran past its deadline
                self._on_expiry(armed[1].nodeid)
                pytest_timeout.timeout_timer(armed[1], armed[2])  # dumps stacks and calls os._exit
                return
