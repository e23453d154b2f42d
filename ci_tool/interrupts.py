"""SIGTERM (a CI cancel) and SIGHUP (a closed terminal) take the Ctrl-C path.

While `ci-tool` runs, either signal raises a KeyboardInterrupt in the main thread, as Ctrl-C does: a
run stops its pytest child's process group (SIGINT, grace, SIGTERM, SIGKILL), records the tests that
finished, marks the run interrupted and exits 130. After SIGHUP the lost terminal's output goes to
/dev/null, so that recording the run does not fail on a write. A signal the caller ignores stays
ignored, so `nohup ci-tool run` still outlives the terminal. Stages that run side by side (`--jobs`) are
processes of their own: while they run, ci-tool hands each signal to every one of them, and each stops its
pytest child as above (ci_tool/run/stage_pool.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
from collections.abc import Iterator
from types import FrameType

TERMINATING = (signal.SIGTERM, signal.SIGHUP)
CTRL_C = "Ctrl-C"


class Interrupted(KeyboardInterrupt):
    """The KeyboardInterrupt raised for a terminating signal; `signal_name` says which (`SIGTERM`)."""

    def __init__(self, signum: int) -> None:
        self.signal_name = signal.Signals(signum).name
        super().__init__(self.signal_name)


def cause(interrupt: KeyboardInterrupt) -> str:
    """What interrupted: `Ctrl-C` (SIGINT) or the terminating signal's name."""
    return interrupt.signal_name if isinstance(interrupt, Interrupted) else CTRL_C


def interrupt_of(signum: int) -> KeyboardInterrupt:
    """The exception `signum` raises in ci-tool: KeyboardInterrupt for SIGINT, Interrupted for the others."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    if signum == signal.SIGHUP:
        silence_lost_terminal()
    raise Interrupted(signum)


def silence_lost_terminal() -> None:
    """After a hang-up every write to the terminal fails (EIO), and recording the run would fail on a
    progress line: what would go there goes to /dev/null. (A hung-up terminal no longer answers isatty;
    any character device is taken for it.)"""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                if stat.S_ISCHR(os.fstat(fd).st_mode):
                    os.dup2(devnull, fd)
    finally:
        os.close(devnull)


@contextlib.contextmanager
def terminating_signals_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise Interrupted; the previous handlers come back after it."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {signum: signal.signal(signum, _interrupt) for signum in TERMINATING if _is_default(signum)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _is_default(signum: int) -> bool:
    return signal.getsignal(signum) is signal.SIG_DFL
