"""Progress of a run: one redrawn bar line for a person's terminal, plain lines for a log (CI, pipes).

bar    CPU-Generic-1 [########------------] 12/30  ok 10  fail 2  skip 0  0:05  tests/a.py::test_x
lines  CPU-Generic-1: started (7 list lines)
       CPU-Generic-1: FAILED tests/a.py::test_x
       CPU-Generic-1: 12/30 tests after 1:00 (10 passed, 2 failed, 0 skipped); running tests/a.py::test_y for 0:40
       CPU-Generic-1: failed in 8.0 s (13 passed, 6 failed, 1 skipped)

Which one (`progress_style`): `--progress bar|lines` (or CI_TOOL_PROGRESS) says; `auto`, the default,
draws the bar only on a terminal that is a person's: not where CI runs (CI, GITHUB_ACTIONS, JENKINS_URL or
BUILD_ID set: act and some agents give steps a terminal whose output is a log all the same), not with
TERM=dumb. In lines, a stage that runs long says where it is at least every LOG_EVERY_SECONDS: its counts
so far and the test that has been running longest, so a log shows what a stage is stuck in.
"""

from __future__ import annotations

import enum
import shutil
import time
from collections.abc import Callable, Mapping
from typing import TextIO

from ci_tool.outcomes import COUNTED, StageState, TestOutcome
from ci_tool.run.process import TICK_EVENT

BAR_WIDTH = 20
REDRAW_SECONDS = 0.1
TICK_REDRAW_SECONDS = 1.0  # with no event, the bar redraws once a second: its elapsed time moves on
LOG_EVERY_SECONDS = 60.0
PROGRESS_ENV = "CI_TOOL_PROGRESS"
# Set where the output is a CI log (GitHub Actions sets CI and GITHUB_ACTIONS; Jenkins JENKINS_URL, BUILD_ID).
LOG_ENVIRONMENT = ("CI", "GITHUB_ACTIONS", "JENKINS_URL", "BUILD_ID")


class ProgressStyle(enum.Enum):
    """How progress shows: a redrawn bar (a person's terminal) or plain lines (a log)."""

    AUTO = "auto"
    BAR = "bar"
    LINES = "lines"


def progress_style(choice: ProgressStyle, *, isatty: bool, environ: Mapping[str, str]) -> ProgressStyle:
    """BAR or LINES: `choice`, or for AUTO what the stream and the environment say (the module docstring)."""
    if choice is not ProgressStyle.AUTO:
        return choice
    is_log = not isatty or environ.get("TERM") == "dumb" or any(environ.get(name) for name in LOG_ENVIRONMENT)
    return ProgressStyle.LINES if is_log else ProgressStyle.BAR


class Progress:
    """Receives stage starts, plugin events and stage ends, and shows them."""

    def __init__(
        self, stream: TextIO, *, tty: bool | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """`tty`: draw the bar (True) or write lines (False); None: the bar where `stream` is a terminal."""
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.clock = clock
        self.stage = ""
        self._reset()

    @classmethod
    def for_stream(cls, stream: TextIO, choice: ProgressStyle, *, environ: Mapping[str, str]) -> Progress:
        """Progress on `stream` in the style `choice` and the environment give (`progress_style`)."""
        style = progress_style(choice, isatty=stream.isatty(), environ=environ)
        return cls(stream, tty=style is ProgressStyle.BAR)

    def _reset(self) -> None:
        self.total = self.finished = 0
        self.counts = dict.fromkeys(COUNTED, 0)
        self.current = ""
        self.running: dict[str, float] = {}  # test -> when it started
        self.started = self.logged_at = self.clock()
        self.drawn_at = 0.0

    def stage_started(self, stage: str, list_lines: int) -> None:
        self.stage = stage
        self._reset()
        if not self.tty:
            self._line(f"{stage}: started ({list_lines} list line{'' if list_lines == 1 else 's'})")

    def event(self, event: Mapping[str, object]) -> None:
        kind = event.get("event")
        if kind == "collected":
            self.total = max(self.total, self.finished + int(str(event.get("count", 0))))
        elif kind == "start":
            self.current = str(event.get("nodeid", ""))
            self.running.setdefault(self.current, self.clock())
        elif kind == "finish":
            self.finished += 1
            self.running.pop(str(event.get("nodeid", "")), None)
            key = TestOutcome(str(event.get("outcome"))).counted_as
            self.counts[key] += 1
            if key is TestOutcome.FAILED and not self.tty:
                self._line(f"{self.stage}: FAILED {event.get('nodeid')}")
        elif kind != TICK_EVENT:
            return
        if self.tty:
            if kind != TICK_EVENT or self.clock() - self.drawn_at >= TICK_REDRAW_SECONDS:  # the clock moves on
                self._draw()
        elif self.clock() - self.logged_at >= LOG_EVERY_SECONDS:
            self._log_progress()

    def _log_progress(self) -> None:
        """The stage's counts so far and the test running longest, as a line of the log."""
        now = self.logged_at = self.clock()
        shown = ", ".join(f"{self.counts[k]} {k}" for k in COUNTED)
        line = f"{self.stage}: {self.finished}/{self.total or '?'} tests after {_minutes(now - self.started)} ({shown})"
        if self.running:
            slowest, since = min(self.running.items(), key=lambda item: item[1])
            line += f"; running {slowest} for {_minutes(now - since)}"
        self._line(line)

    def stage_finished(
        self, stage: str, state: StageState, seconds: float, counts: Mapping[TestOutcome, int], reason: str = ""
    ) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K")
        shown = ", ".join(f"{counts.get(k, 0)} {k}" for k in COUNTED)
        self._line(f"{stage}: {state} in {seconds:.1f} s ({shown})" + (f": {reason}" if reason else ""))

    def stage_not_run(self, stage: str, state: StageState, reason: str) -> None:
        self._line(f"{stage}: {reason}" if state is StageState.REUSED else f"{stage}: {state.words}: {reason}")

    def warning(self, text: str) -> None:
        """Something the run goes on despite (the history cannot take its records, say)."""
        self.note(f"warning: {text}")

    def note(self, text: str) -> None:
        """A line of its own (`CPU-Generic-1: submitted as Slurm job 12 ...`)."""
        if self.tty:
            self.stream.write("\r\x1b[2K")
        self._line(text)

    def _draw(self) -> None:
        now = self.clock()
        if now - self.drawn_at < REDRAW_SECONDS and self.finished < self.total:
            return
        self.drawn_at = now
        filled = BAR_WIDTH * self.finished // self.total if self.total else 0
        text = (
            f"{self.stage} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {self.finished}/{self.total or '?'}  "
            f"ok {self.counts[TestOutcome.PASSED]}  fail {self.counts[TestOutcome.FAILED]}  "
            f"skip {self.counts[TestOutcome.SKIPPED]}  "
            f"{_minutes(now - self.started)}  {self.current}"
        )
        width = shutil.get_terminal_size((100, 20)).columns - 1
        self.stream.write("\r\x1b[2K" + text[:width])
        self.stream.flush()

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


def _minutes(seconds: float) -> str:
    """`3:05`: minutes and seconds, as the bar and the log lines show times."""
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"
