"""SIGTERM (a CI cancel) and SIGHUP (a closed terminal) take the Ctrl-C path.

While `ci-tool` runs, either signal raises a KeyboardInterrupt in the main thread, as Ctrl-C does: a
run stops its pytest child's process group (SIGINT, grace, SIGTERM, SIGKILL), records the tests that
finished, marks the run interrupted and exits 130. After SIGHUP the lost terminal's output goes to
/dev/null, so that recording the run does not fail on a write. A signal the caller ignores stays
ignored, so `nohup ci-tool run` still outlives the terminal. Stages that run side by side (`--jobs`) are
processes of their own: while they run, ci-tool hands each signal to every one of them, and each stops its
pytest child as above (ci_tool/run/stage_pool.py).

While ci-tool waits on a pytest child, the signals are *held* (`held`): the handler only notes them, and the
waiting loop raises the interrupt between its polls. An interrupt raised anywhere may land inside the
standard library's `Popen.wait` just after it took the Popen's waitpid lock and before the `try` that would
release it; every later `wait()` then blocks forever. On a loaded 2-core box one interrupt in 15,151 did that
(bench/popen_interrupt_race.py, two runs), and a CI run hung on it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

TERMINATING = (signal.SIGTERM, signal.SIGHUP)
INTERRUPTING = (signal.SIGINT, *TERMINATING)
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


def cause_of(signum: int) -> str:
    """What interrupted, by the signal: `Ctrl-C` for SIGINT, else the signal's name."""
    return cause(interrupt_of(signum))


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


class Held:
    """The interrupting signals that came while a block held them (`held`), in order."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.handlers: dict[int, Callable[[int, FrameType | None], Any]] = {}

    def note(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:  # at once: the next write to the lost terminal would fail
            silence_lost_terminal()
        self.signals.append(signum)

    def take(self) -> int | None:
        """The first signal held since the last take (the others are dropped), or None."""
        taken = self.signals[0] if self.signals else None
        self.signals.clear()
        return taken

    def raise_any(self) -> None:
        """Run the handler a held signal would have run (it raises the interrupt); nothing when none came."""
        signum = self.take()
        if signum is not None:
            self.handlers[signum](signum, None)


@contextlib.contextmanager
def held() -> Iterator[Held]:
    """Within the block, SIGINT, SIGTERM and SIGHUP are noted instead of handled; the block raises them at
    points of its choosing (`Held.raise_any`). Only signals with a Python handler are held: an ignored one
    stays ignored, a default one keeps its default. Outside the main thread nothing is held."""
    holder = Held()
    if threading.current_thread() is not threading.main_thread():
        yield holder
        return
    for signum in INTERRUPTING:
        handler = signal.getsignal(signum)
        if callable(handler):
            holder.handlers[signum] = handler
            signal.signal(signum, holder.note)
    try:
        yield holder
    finally:
        for held_signal, handler in holder.handlers.items():
            signal.signal(held_signal, handler)
