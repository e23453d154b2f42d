"""Progress of a run: one redrawn bar line on a terminal, plain lines otherwise (CI logs, pipes).

terminal  CPU-Generic-1 [########------------] 12/30  ok 10  fail 2  skip 0  0:05  tests/a.py::test_x
plain     CPU-Generic-1: started (7 list lines)
          CPU-Generic-1: FAILED tests/a.py::test_x
          CPU-Generic-1: failed in 8.0 s (13 passed, 6 failed, 1 skipped)
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from typing import TextIO

from ci_tool.outcomes import COUNTED, StageState, TestOutcome

BAR_WIDTH = 20
REDRAW_SECONDS = 0.1


class Progress:
    """Receives stage starts, plugin events and stage ends, and shows them."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.stage = ""
        self._reset()

    def _reset(self) -> None:
        self.total = self.finished = 0
        self.counts = dict.fromkeys(COUNTED, 0)
        self.current = ""
        self.started = time.monotonic()
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
        elif kind == "finish":
            self.finished += 1
            key = TestOutcome(str(event.get("outcome"))).counted_as
            self.counts[key] += 1
            if key is TestOutcome.FAILED and not self.tty:
                self._line(f"{self.stage}: FAILED {event.get('nodeid')}")
        if self.tty:
            self._draw()

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
        now = time.monotonic()
        if now - self.drawn_at < REDRAW_SECONDS and self.finished < self.total:
            return
        self.drawn_at = now
        filled = BAR_WIDTH * self.finished // self.total if self.total else 0
        elapsed = int(now - self.started)
        text = (
            f"{self.stage} [{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {self.finished}/{self.total or '?'}  "
            f"ok {self.counts[TestOutcome.PASSED]}  fail {self.counts[TestOutcome.FAILED]}  "
            f"skip {self.counts[TestOutcome.SKIPPED]}  "
            f"{elapsed // 60}:{elapsed % 60:02d}  {self.current}"
        )
        width = shutil.get_terminal_size((100, 20)).columns - 1
        self.stream.write("\r\x1b[2K" + text[:width])
        self.stream.flush()

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
