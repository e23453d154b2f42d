"""One pytest process of a stage: build its command, run it, watch its events, stop it cleanly, and read
back what it left (finished testcases, the test it died in, what it collected).

The child runs in its own session so that Ctrl-C reaches it once, from us: SIGINT (pytest finishes its
reports), then after a grace period SIGTERM, then SIGKILL, each to the child's whole process group.
SIGTERM and SIGHUP to ci-tool take the same path (ci_tool.interrupts). However the child ends, what is
left of its group (processes its tests started) is killed, then every other process it left behind, also one
that left the group (`setsid`: ci_tool.run.reaper), before its results are read; and a ci-tool that dies
takes the child down with it (ci_tool.run.parent_death).
A child that stops reporting for longer than the running test's timeout (or the default one) plus a
margin is killed: a hang pytest-timeout cannot see (collection, session teardown, a stuck plugin).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ci_tool import interrupts
from ci_tool.errors import RunError
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit, output_bounds, parent_death, reaper
from ci_tool.run.events import EventKind
from ci_tool.run.invocation import PytestInvocation

EventSink = Callable[[Mapping[str, object]], None]
STALL_MARGIN_SECONDS = 120.0
TERM_GRACE_SECONDS = 5.0
_POLL_SECONDS = 0.05
_TIMEOUT_BANNER = "+ Timeout +"


@dataclass(frozen=True)
class ProcessOutcome:
    invocation: PytestInvocation
    command: tuple[str, ...]
    exit_code: int | None
    cases: tuple[junit.CaseResult, ...]  # finished tests (and collection errors), in order
    unfinished: junit.CaseResult | None  # the test the process died (or was stopped) in
    collected: tuple[str, ...] | None  # None: the process never finished collecting
    uncollected: tuple[Mapping[str, object], ...]
    completed: bool  # pytest ended normally (its session finished)
    interrupted: bool
    seconds: float
    notes: tuple[str, ...] = field(default=())
    interrupted_by: str = ""  # what interrupted it: Ctrl-C, SIGTERM, SIGHUP

    @property
    def label(self) -> str:
        return self.invocation.label

    @property
    def log_file(self) -> Path:
        return self.invocation.log_file


class EventReader:
    """Reads the complete lines appended to the events file since the last call. A line that is no JSON
    object (a write torn by a full disk, with the next one appended to it) is skipped, not trusted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: IO[str] | None = None
        self.buffer = ""

    def read(self) -> list[dict[str, object]]:
        if self.handle is None:
            if not self.path.exists():
                return []
            self.handle = open(self.path, encoding="utf-8")  # noqa: SIM115 - kept open while tailing
        self.buffer += self.handle.read()
        *complete, self.buffer = self.buffer.split("\n")
        return [event for line in complete if line.strip() and (event := _event(line)) is not None]

    def read_all(self) -> list[dict[str, object]]:
        """Every complete event of the file, read from its start (the reader is closed after)."""
        try:
            return self.read()
        finally:
            self.close()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def _event(line: str) -> dict[str, object] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def run_pytest_process(
    invocation: PytestInvocation,
    *,
    python: str,
    rootdir: Path,
    on_event: EventSink,
    interrupt_grace_seconds: float = 10.0,
) -> ProcessOutcome:
    """Run one pytest process to its end (or until interrupted) and read what it left."""
    invocation.parts_dir.mkdir(parents=True, exist_ok=True)
    for stale in (invocation.junit_file, invocation.events_file, invocation.report_file, invocation.done_file):
        stale.unlink(missing_ok=True)
    command = invocation.command(python)
    started = time.monotonic()
    reader = EventReader(invocation.events_file)
    events: list[dict[str, object]] = []
    stalled = False
    interrupted_by = ""
    with (
        open(invocation.log_file, "w", encoding="utf-8") as log,
        reaper.subreaper() as spared,
        interrupts.held() as signals,  # raised between polls only (ci_tool/interrupts.py says why)
    ):
        log.write("$ " + " ".join(command) + "\n")
        log.flush()
        child = subprocess.Popen(
            command,
            cwd=rootdir,
            env=invocation.environment(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=parent_death.child_preparation(),
        )
        try:
            stall_seconds = invocation.test_timeout_seconds + STALL_MARGIN_SECONDS
            stalled = _watch(child, reader, events, on_event, stall_seconds, signals)
        except KeyboardInterrupt as interrupt:
            interrupted_by = interrupts.cause(interrupt)
            _stop(child, interrupt_grace_seconds, signals)
        finally:  # what the tests started and left running ends with the stage, even what left the group
            _signal_group(child, signal.SIGKILL)
            child.wait()
            reaper.reap_descendants(spared)
        late = signals.take()  # came as the child ended: the stage stops here all the same
        if late is not None and not interrupted_by:
            interrupted_by = interrupts.cause_of(late)
    reader.close()
    # the whole file once more: what the child wrote after the last poll (its last words as it was stopped),
    # and anything a read lost when it failed half way
    every = EventReader(invocation.events_file).read_all()
    for event in every[len(events) :]:
        on_event(event)
    events = every
    seconds = time.monotonic() - started
    return _outcome(invocation, command, child.returncode, events, interrupted_by, stalled, seconds)


def _watch(
    child: subprocess.Popen[bytes],
    reader: EventReader,
    events: list[dict[str, object]],
    on_event: EventSink,
    stall_seconds: float,
    signals: interrupts.Held,
) -> bool:
    """Forward events until the child exits; kill it and return True when it stops reporting. A held
    signal raises its interrupt here, between polls."""
    last_progress = time.monotonic()
    allowed = stall_seconds
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=_POLL_SECONDS)
        signals.raise_any()
        read = reader.read()
        for event in read:
            events.append(event)
            on_event(event)
            last_progress = time.monotonic()
            test_timeout = event.get("timeout")  # a test's own (longer) timeout extends the allowance
            own = test_timeout + STALL_MARGIN_SECONDS if isinstance(test_timeout, int | float) else 0.0
            allowed = max(stall_seconds, own)
        if not read:
            on_event({"event": EventKind.TICK})
        if child.returncode is not None:
            return False
        if time.monotonic() - last_progress > allowed:
            _signal_group(child, signal.SIGKILL)
            child.wait()
            return True


def _signal_group(child: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signum)


def _stop(child: subprocess.Popen[bytes], grace_seconds: float, signals: interrupts.Held) -> None:
    """SIGINT, then SIGTERM, then SIGKILL to the child's group; a second interrupt skips to SIGKILL."""
    for signum, wait_seconds in ((signal.SIGINT, grace_seconds), (signal.SIGTERM, TERM_GRACE_SECONDS)):
        _signal_group(child, signum)
        if _ended_within(child, wait_seconds, signals):
            return
        if signals.take() is not None:
            break
    _signal_group(child, signal.SIGKILL)
    child.wait()


def _ended_within(child: subprocess.Popen[bytes], seconds: float, signals: interrupts.Held) -> bool:
    """Whether the child ended within `seconds`; the wait ends early when another signal comes."""
    deadline = time.monotonic() + seconds
    while not signals.signals and (left := deadline - time.monotonic()) > 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=min(_POLL_SECONDS, left))
        if child.returncode is not None:
            return True
    return child.returncode is not None


def _outcome(
    invocation: PytestInvocation,
    command: list[str],
    exit_code: int | None,
    events: list[dict[str, object]],
    interrupted_by: str,
    stalled: bool,
    seconds: float,
) -> ProcessOutcome:
    cases = _finished_cases(invocation.junit_file)
    collected: tuple[str, ...] | None = None
    uncollected: tuple[Mapping[str, object], ...] = ()
    if invocation.report_file.exists():
        report = json.loads(invocation.report_file.read_text(encoding="utf-8"))
        collected, uncollected = tuple(report["collected"]), tuple(report["uncollected"])
    completed = any(e.get("event") == EventKind.DONE for e in events)
    finished = {e.get("nodeid") for e in events if e.get("event") == EventKind.FINISH}
    starts = [e for e in events if e.get("event") == EventKind.START and e.get("nodeid") not in finished]
    unfinished = None
    if starts:
        unfinished = _unfinished_case(invocation, starts[-1], exit_code, interrupted_by, stalled)
    return ProcessOutcome(
        invocation,
        tuple(command),
        exit_code,
        tuple(cases),
        unfinished,
        collected,
        uncollected,
        completed and not stalled,
        bool(interrupted_by),
        seconds,
        interrupted_by=interrupted_by,
    )


def _finished_cases(path: Path) -> tuple[junit.CaseResult, ...]:
    """The testcases of a process's JUnit stream; none when it never wrote one, or died (of a full disk, at
    start-up) before the stream had its suite."""
    try:
        return junit.parse_junit(path).cases if path.exists() else ()
    except RunError:
        return ()


def _unfinished_case(
    invocation: PytestInvocation, start: Mapping[str, object], exit_code: int | None, interrupted_by: str, stalled: bool
) -> junit.CaseResult:
    """The test a process died in, recorded as a timeout, a crash or an interruption."""
    nodeid = str(start["nodeid"])
    started_at = start.get("time")
    seconds = max(0.0, time.time() - float(started_at)) if isinstance(started_at, int | float) else 0.0
    log_tail = _log_tail(invocation.log_file, nodeid)
    if interrupted_by:
        outcome, kind = TestOutcome.SKIPPED, junit.INTERRUPTED_KIND
        message = f"interrupted ({interrupted_by}) before the test finished"
    elif stalled or _TIMEOUT_BANNER in log_tail:
        outcome, kind = TestOutcome.FAILED, junit.TIMEOUT_KIND
        limit = f"its {invocation.test_timeout_seconds} s limit" if stalled else "its timeout"
        message = f"Timeout: the test did not finish within {limit}; the process was stopped after {seconds:.1f} s"
    else:
        outcome, kind = TestOutcome.ERROR, junit.CRASH_KIND
        message = f"Crash: the pytest process exited with code {exit_code} while the test ran"
    text = f"{message}\nThe end of {invocation.log_file.name}:\n{log_tail}"
    return junit.CaseResult(nodeid, outcome, seconds, message, text, kind, stage=invocation.stage)


def _log_tail(path: Path, nodeid: str, *, max_lines: int = 60) -> str:
    """The log from the progress line of the test's file on (at most the last `max_lines` lines, read from
    the log's end: a test that printed 1.5 GB costs one seek)."""
    lines = output_bounds.read_tail(path).splitlines()
    file_path = nodeid.split("::", 1)[0]
    starts = [index for index, line in enumerate(lines) if line.startswith((nodeid + " ", file_path + " "))]
    return output_bounds.cut_text("\n".join(lines[starts[-1] if starts else 0 :][-max_lines:]))


def write_nodeids(path: Path, nodeids: Sequence[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(n + "\n" for n in nodeids), encoding="utf-8")
    return path
