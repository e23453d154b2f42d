"""A stage's processes die with ci-tool: nothing a stage started outlives it, however ci-tool ends.

    ci-tool ── pytest (its own session, group G) ── what the tests start (group G too, unless they leave it)

- Each pytest process asks the kernel (Linux `prctl(PR_SET_PDEATHSIG)`) for SIGTERM when ci-tool dies,
  SIGKILL included; it is set between fork and exec, so no instant of the child's life goes without it
  (a ci-tool that died before it was set is caught by comparing the parent pid). Elsewhere it is a no-op.
  The kernel sends it when the *thread* that started the child ends: start children from a thread that
  lives as long as they should (ci-tool starts them from its main thread).
- Under ci-tool (the test-list plugin) pytest takes SIGTERM as "the stage is over": it SIGKILLs its whole
  group, the processes its tests started with it. pytest never handled SIGTERM (its default was to die
  at once, without reports), so CI cancels and ci-tool's own escalation lose nothing by it.
- When a pytest process ends, however it ends, ci-tool SIGKILLs what is left of its group
  (ci_tool.run.process): a server a test started and never stopped does not outlive the stage.

A process that leaves the group on purpose (`setsid`, `start_new_session=True`) is out of the group's reach:
ci_tool.run.reaper finds it as ci-tool's orphan (ci-tool is the child subreaper) and kills it when the pytest
process ends. Only when ci-tool itself dies at once (SIGKILL) can such a process outlive it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from types import FrameType

from ci_tool.run.prctl import PRCTL

PARENT_DEATH_SIGNAL = signal.SIGTERM
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>




def supported() -> bool:
    """Whether this system has a parent-death signal (Linux)."""
    return PRCTL is not None


def child_preparation(parent_pid: int | None = None) -> Callable[[], None] | None:
    """The `preexec_fn` that gives a child the parent-death signal (None where there is none). It makes
    one system call and reads the parent pid (two more where the parent is gone): nothing that takes a lock
    after fork."""
    prctl = PRCTL
    if prctl is None:
        return None
    parent = os.getpid() if parent_pid is None else parent_pid

    def prepare() -> None:
        prctl(_PR_SET_PDEATHSIG, int(PARENT_DEATH_SIGNAL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was set: nobody would send it
            # default first: a handler the fork inherited must not run here (pytest under ci-tool answers it
            # by killing its whole group: end_group_on_sigterm)
            signal.signal(PARENT_DEATH_SIGNAL, signal.SIG_DFL)
            os.kill(os.getpid(), PARENT_DEATH_SIGNAL)

    return prepare


def end_group_on_sigterm() -> None:
    """In pytest under ci-tool: SIGTERM (ci-tool died, or the stage is being stopped) SIGKILLs this
    process's whole group, the processes its tests started with it."""
    signal.signal(PARENT_DEATH_SIGNAL, _kill_group)


def _kill_group(signum: int, frame: FrameType | None) -> None:
    os.killpg(os.getpgrp(), signal.SIGKILL)
