"""Start a child as from a shell prompt: SIGINT, SIGTERM and SIGHUP at their defaults, whatever this test run
inherited. A script's background job (`.ci/run &` in a non-interactive shell) ignores SIGINT, every process it
starts inherits that, and ci-tool keeps a disposition it was given (interrupts.py): a test that presses Ctrl-C
would then wait for nothing."""

from __future__ import annotations

import signal

PROMPT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def reset_to_prompt_defaults() -> None:
    """A `preexec_fn`: it only sets signal dispositions, nothing that takes a lock after fork."""
    for signum in PROMPT_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
