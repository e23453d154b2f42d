"""The words of a run's report that its markdown and its HTML page share, so both say the same."""

from __future__ import annotations

from ci_tool.history.flakiness import FlakeStats
from ci_tool.outcomes import RunState
from ci_tool.report.model import CiReport

KNOWN_FLAKY_TITLE = "Failures of known flaky tests"
KNOWN_FLAKY_NOTE = "flaky on the same GPU type before this run: likely not caused by this change"


def seconds_text(value: float) -> str:
    """`12.5 s`, `3 min 20 s`."""
    minutes, seconds = divmod(value, 60)
    return f"{int(minutes)} min {seconds:.0f} s" if minutes else f"{seconds:.1f} s"


def run_state_words(state: RunState, waiting: int) -> str:
    """A run's state for people: a pending run is green here, with stages left for CI's runners."""
    if state is RunState.PENDING:
        return f"passed here, {waiting} stage{'s' if waiting != 1 else ''} waiting for a runner"
    return state.value


def counted(count: int, noun: str) -> str:
    """`1 test`, `3 tests`."""
    return f"{count} {noun}" + ("s" if count != 1 else "")


def failures_title(report: CiReport) -> str:
    """`Failures`, or `New failures` beside failures of known flaky tests."""
    return "New failures" if report.known_flaky else "Failures"


def known_flaky_words(flake: FlakeStats) -> str:
    """`flake rate 33% (1 of 3 runs on A10)`."""
    return f"flake rate {flake.rate_text()}"
