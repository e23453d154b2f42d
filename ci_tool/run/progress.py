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
so far and the test that has been running longest, so a log shows what a stage is stuck in. Stages that run
side by side (`--jobs`) share the one stream: every line names its stage, each running stage logs at least
every LOG_EVERY_SECONDS, and the bar shows them all: `2 stages  ok 12  fail 0  skip 1  CPU-Generic-1 7/30  ...`.
"""

from __future__ import annotations

import enum
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TextIO

from ci_tool.outcomes import COUNTED, StageState, TestOutcome
from ci_tool.run.events import EventKind

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


@dataclass
class _StageView:
    """What the progress shows of one running stage: its counts so far, the tests running, its clocks."""

    started: float
    total: int = 0
    finished: int = 0
    counts: dict[TestOutcome, int] = field(default_factory=lambda: dict.fromkeys(COUNTED, 0))
    current: str = ""
    running: dict[str, float] = field(default_factory=dict)  # test -> when it started
    logged_at: float = 0.0


class Progress:
    """Receives stage starts, plugin events and stage ends, and shows them. Several stages may run at once
    (`ci-tool run --jobs`): their events come through `stage_event`, every line names its stage, each
    running stage logs at least every LOG_EVERY_SECONDS, and the bar shows them side by side."""

    def __init__(
        self, stream: TextIO, *, tty: bool | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        """`tty`: draw the bar (True) or write lines (False); None: the bar where `stream` is a terminal."""
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.clock = clock
        self.stage = ""  # the stage started last: the one `event` (one stage at a time) speaks of
        self.views: dict[str, _StageView] = {}
        self.drawn_at = 0.0

    @classmethod
    def for_stream(cls, stream: TextIO, choice: ProgressStyle, *, environ: Mapping[str, str]) -> Progress:
        """Progress on `stream` in the style `choice` and the environment give (`progress_style`)."""
        style = progress_style(choice, isatty=stream.isatty(), environ=environ)
        return cls(stream, tty=style is ProgressStyle.BAR)

    def stage_started(self, stage: str, list_lines: int) -> None:
        self.stage = stage
        now = self.clock()
        self.views[stage] = _StageView(started=now, logged_at=now)
        self.drawn_at = 0.0
        if not self.tty:
            self._line(f"{stage}: started ({list_lines} list line{'' if list_lines == 1 else 's'})")

    def event(self, event: Mapping[str, object]) -> None:
        """An event of the stage started last (one stage at a time)."""
        self.stage_event(self.stage, event)

    def tick(self) -> None:
        """The clock moves on for every running stage (a wait that read no event)."""
        for stage in list(self.views):
            self.stage_event(stage, {"event": EventKind.TICK})

    def stage_event(self, stage: str, event: Mapping[str, object]) -> None:
        view = self.views.setdefault(stage, _StageView(started=self.clock(), logged_at=self.clock()))
        kind = event.get("event")
        if kind == EventKind.COLLECTED:
            view.total = max(view.total, view.finished + int(str(event.get("count", 0))))
        elif kind == EventKind.START:
            view.current = str(event.get("nodeid", ""))
            view.running.setdefault(view.current, self.clock())
        elif kind == EventKind.FINISH:
            view.finished += 1
            view.running.pop(str(event.get("nodeid", "")), None)
            key = TestOutcome(str(event.get("outcome"))).counted_as
            view.counts[key] += 1
            if key is TestOutcome.FAILED and not self.tty:
                self._line(f"{stage}: FAILED {event.get('nodeid')}")
        elif kind != EventKind.TICK:
            return
        if self.tty:
            if kind != EventKind.TICK or self.clock() - self.drawn_at >= TICK_REDRAW_SECONDS:  # the clock moves on
                self._draw()
        elif self.clock() - view.logged_at >= LOG_EVERY_SECONDS:
            self._log_progress(stage, view)

    def _log_progress(self, stage: str, view: _StageView) -> None:
        """The stage's counts so far and the test running longest, as a line of the log."""
        now = view.logged_at = self.clock()
        shown = ", ".join(f"{view.counts[k]} {k}" for k in COUNTED)
        line = f"{stage}: {view.finished}/{view.total or '?'} tests after {_minutes(now - view.started)} ({shown})"
        if view.running:
            slowest, since = min(view.running.items(), key=lambda item: item[1])
            many = f"{len(view.running)} tests, the longest " if len(view.running) > 1 else ""  # xdist workers
            line += f"; running {many}{slowest} for {_minutes(now - since)}"
        self._line(line)

    def stage_finished(
        self, stage: str, state: StageState, seconds: float, counts: Mapping[TestOutcome, int], reason: str = ""
    ) -> None:
        self.views.pop(stage, None)
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
        unfinished = any(view.finished < view.total for view in self.views.values())
        if (now - self.drawn_at < REDRAW_SECONDS and unfinished) or not self.views:
            return
        self.drawn_at = now
        if len(self.views) == 1:
            ((stage, view),) = self.views.items()
            filled = BAR_WIDTH * view.finished // view.total if view.total else 0
            text = (
                f"{stage} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {view.finished}/{view.total or '?'}  "
                f"ok {view.counts[TestOutcome.PASSED]}  fail {view.counts[TestOutcome.FAILED]}  "
                f"skip {view.counts[TestOutcome.SKIPPED]}  "
                f"{_minutes(now - view.started)}  {view.current}"
            )
        else:  # several stages side by side: each one's tests done so far, then the counts of them all
            counts = {k: sum(view.counts[k] for view in self.views.values()) for k in COUNTED}
            each = "  ".join(f"{stage} {view.finished}/{view.total or '?'}" for stage, view in self.views.items())
            text = (
                f"{len(self.views)} stages  ok {counts[TestOutcome.PASSED]}  fail {counts[TestOutcome.FAILED]}  "
                f"skip {counts[TestOutcome.SKIPPED]}  {each}"
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
