"""The words of a run's report that its markdown and its HTML page share, so both say the same."""

from __future__ import annotations

from collections.abc import Mapping

from ci_tool.history.flakiness import FlakeStats
from ci_tool.outcomes import COUNTED
from ci_tool.report.model import CiReport, run_seconds

KNOWN_FLAKY_TITLE = "Failures of known flaky tests"
KNOWN_FLAKY_NOTE = "flaky on the same GPU type before this run: likely not caused by this change"


def seconds_text(value: float) -> str:
    """`12.5 s`, `3 min 20 s`."""
    minutes, seconds = divmod(value, 60)
    return f"{int(minutes)} min {seconds:.0f} s" if minutes else f"{seconds:.1f} s"


def totals_words(report: CiReport) -> str:
    """The headline's counts: `4 passed, 1 failed, 0 skipped · 12.5 s`, and what the run reused, with the
    counts and time of the stages where they ran: `; 3 stages reused from run R: 12 passed, 0 failed,
    0 skipped · 1 min 5 s of stage time there` (the stages' own times summed: stages that ran side by side
    took less wall time). A run that ran nothing says only what it reused."""
    took = run_seconds(report.run)
    ran = _counts(report.totals) + (f" · {seconds_text(took)}" if took is not None else "")
    reused = report.reused_from.values()
    if not reused:
        return ran
    runs = sorted({stage.run_id for stage in reused})
    there = {key.value: sum(getattr(stage, key) for stage in reused) for key in COUNTED}
    seconds = sum(stage.duration_seconds for stage in reused)
    what = (
        f"{counted(len(reused), 'stage')} reused from run{'s' if len(runs) > 1 else ''} {', '.join(runs)}: "
        f"{_counts(there)} · {seconds_text(seconds)} of stage time there"
    )
    return f"{ran}; {what}" if any(stage.state.ran for stage in report.stages) else what


def _counts(totals: Mapping[str, int]) -> str:
    return ", ".join(f"{totals[key]} {key}" for key in COUNTED)


def counted(count: int, noun: str) -> str:
    """`1 test`, `3 tests`."""
    return f"{count} {noun}" + ("s" if count != 1 else "")


def failures_title(report: CiReport) -> str:
    """`Failures`, or `New failures` beside failures of known flaky tests."""
    return "New failures" if report.known_flaky else "Failures"


def known_flaky_words(flake: FlakeStats) -> str:
    """`flake rate 33% (1 of 3 runs on A10)`."""
    return f"flake rate {flake.rate_text()}"
