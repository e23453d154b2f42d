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


def test_a_held_signal_waits_for_the_holder_and_then_raises_its_interrupt(default_handlers: None) -> None:
    with interrupts.terminating_signals_interrupt(), interrupts.held() as held:
        signal.raise_signal(signal.SIGTERM)  # noted only: no interrupt here
        signal.raise_signal(signal.SIGINT)
        assert held.signals == [signal.SIGTERM, signal.SIGINT]
        with pytest.raises(KeyboardInterrupt) as caught:
            held.raise_any()
        held.raise_any()  # the first signal is raised, the ones after it are dropped with it
    assert interrupts.cause(caught.value) == "SIGTERM"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_held_raises_a_keyboard_interrupt_and_take_names_it() -> None:
    with interrupts.held() as held:
        signal.raise_signal(signal.SIGINT)
        assert interrupts.cause_of(signal.SIGINT) == "Ctrl-C"
        with pytest.raises(KeyboardInterrupt):
            held.raise_any()
        signal.raise_signal(signal.SIGINT)
        assert (held.take(), held.take()) == (signal.SIGINT, None)


def test_an_ignored_or_default_signal_is_not_held(default_handlers: None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with interrupts.held() as held:
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        signal.raise_signal(signal.SIGHUP)
        assert held.signals == []
