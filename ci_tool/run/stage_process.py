"""The program that runs one stage beside others (run/stage_pool.py starts it, one per running stage, with
the ci_tool the pool runs; `python -m ci_tool.run.stage_process` runs it by hand).

    stdin    the StageJob (typed JSON, one line): the plan the session made and the stage's run settings
    stdout   one line per plugin event, `event <json>`, as its pytest processes report them (no ticks: the
             pool keeps the clock), then `result <typed JSON of the StageResult>` once the stage ended
    stderr   what went wrong when no result line came (its last line becomes the failed stage's reason)

Each stage is a process of its own so that what one stage's runner does to its children (the subreaper and
the reaping of what its tests left behind, run/reaper.py; Ctrl-C's escalation, run/process.py) never reaches
another stage's. The pool forwards SIGINT, SIGTERM and SIGHUP; they stop the stage's pytest processes as in
a serial run (ci_tool/interrupts.py), and the result keeps the tests that finished. It dies with the pool
(run/parent_death.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO

from ci_tool import interrupts, typed_json
from ci_tool.errors import CiToolError, RunError
from ci_tool.run.events import EventKind
from ci_tool.run.invocation import RunSettings
from ci_tool.run.jobs import run_job
from ci_tool.run.process import EventSink
from ci_tool.stages.stage_plan import StagePlan

EVENT_PREFIX = "event "
RESULT_PREFIX = "result "


@dataclass(frozen=True)
class StageJob:
    """What the pool hands the program: the planned stage and how it runs."""

    plan: StagePlan
    settings: RunSettings


def _forwarder(out: TextIO) -> EventSink:
    """Each event to the pool, until the pool reads no more (it stopped the stage): then none."""
    gone = False

    def forward(event: Mapping[str, object]) -> None:
        nonlocal gone
        if event.get("event") == EventKind.TICK or gone:
            return
        try:
            out.write(EVENT_PREFIX + json.dumps(event, separators=(",", ":")) + "\n")
            out.flush()
        except BrokenPipeError:
            gone = True

    return forward


def main() -> int:
    try:
        job = typed_json.load(sys.stdin.read(), StageJob, file="<stdin>", error=RunError)
        with interrupts.terminating_signals_interrupt():
            result = run_job(job.plan, job.settings, on_event=_forwarder(sys.stdout))
    except CiToolError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        sys.stdout.write(RESULT_PREFIX + typed_json.dump(result))
        sys.stdout.flush()
    except BrokenPipeError:  # the pool is gone; the stage's folder holds its results
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
