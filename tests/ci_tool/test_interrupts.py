"""SIGTERM and SIGHUP take the Ctrl-C path while ci-tool runs; an ignored signal stays ignored. Real signals,
raised in this process (the end-to-end runs are in tests/ci_tool/run/test_run_cli.py)."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from ci_tool import interrupts


@pytest.fixture
def default_handlers() -> Iterator[None]:
    """SIGTERM and SIGHUP at their default, as a fresh `ci-tool` process finds them; restored afterwards."""
    saved = {signum: signal.signal(signum, signal.SIG_DFL) for signum in interrupts.TERMINATING}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_sigterm_raises_a_keyboard_interrupt_naming_it(default_handlers: None) -> None:
    # (SIGHUP is tried end to end only: it sends a terminal's output to /dev/null, pytest's own too.)
    with pytest.raises(KeyboardInterrupt) as caught, interrupts.terminating_signals_interrupt():
        signal.raise_signal(signal.SIGTERM)
    assert interrupts.cause(caught.value) == "SIGTERM"


def test_ctrl_c_is_named_ctrl_c() -> None:
    assert interrupts.cause(KeyboardInterrupt()) == "Ctrl-C"


def test_an_ignored_signal_stays_ignored_and_handlers_come_back(default_handlers: None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under `nohup ci-tool run`
    with interrupts.terminating_signals_interrupt():
        signal.raise_signal(signal.SIGHUP)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    assert (signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGTERM)) == (signal.SIG_IGN, signal.SIG_DFL)
