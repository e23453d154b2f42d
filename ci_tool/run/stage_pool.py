"""The local executor with room for several stages (`ci-tool run --jobs N`, N > 1): each running stage is
a child process (run/stage_process.py) and the host's room is run/resources.py's.

    start        takes the stage's cores and devices (CUDA_VISIBLE_DEVICES), starts its process, hands it
                 the plan on stdin
    waiting      reads every child's events as they come and passes them on, named by stage; the clock
                 ticks for all at least once a second (progress lines in a log); a child that ends hands
                 back its StageResult (or, without one, the stage fails with what its process said)
    fail-fast    the pipeline starts nothing new; the running stages finish and keep their results
    signals      while stages run, SIGINT, SIGTERM and SIGHUP go to each running stage's process (a second
                 one too: its pytest processes are then killed at once); every stage ends interrupted with
                 the tests that finished, the pipeline starts nothing new, and the run ends interrupted
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO

import ci_tool
from ci_tool import interrupts, typed_json
from ci_tool.errors import RunError
from ci_tool.history.locator import without_history_access
from ci_tool.outcomes import StageState
from ci_tool.run import output_bounds, parent_death
from ci_tool.run.executor import Finished, ReadyStage
from ci_tool.run.pipeline import NOT_STARTED_INTERRUPTED, StageOutcome, runner_mismatch
from ci_tool.run.resources import Grant, Slots, stage_needs
from ci_tool.run.stage_process import EVENT_PREFIX, RESULT_PREFIX, StageJob
from ci_tool.run.stage_runner import StageResult, write_stage_files
from ci_tool.stages.names import StageName
from ci_tool.stages.query import QueryValue

TICK_SECONDS = 1.0
# The stage's program imports the ci_tool this process runs (an installed one, or a checkout's run as
# `python -m ci_tool`), on its own import path only: the stage's pytest processes inherit no PYTHONPATH.
_PACKAGE_HOME = Path(ci_tool.__file__).resolve().parents[1]
_PROGRAM = (
    "import sys; sys.path.insert(0, sys.argv[1]); from ci_tool.run import stage_process; sys.exit(stage_process.main())"
)
STOP_GRACE_SECONDS = 30.0  # a stopped stage's pytest processes get 10 s + 5 s (process.py)
FORWARDED = (signal.SIGINT, *interrupts.TERMINATING)
StageSink = Callable[[str, Mapping[str, object]], None]


@dataclass
class _Child:
    ready: ReadyStage
    grant: Grant
    process: subprocess.Popen[bytes]
    stderr: BinaryIO
    started_at: float
    clock: float
    buffer: bytes = b""
    result: StageResult | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def stage(self) -> str:
        return self.ready.plan.name.name


class StagePool:
    """This machine, several stages at once (the module docstring)."""

    def __init__(
        self,
        sysinfo: Mapping[str, QueryValue],
        slots: Slots,
        *,
        on_event: StageSink,
        on_tick: Callable[[], None],
        workers: Callable[[StageName], int] = lambda name: 1,
        python: str = sys.executable,
    ) -> None:
        self.sysinfo, self.slots, self.on_event, self.on_tick, self.python = sysinfo, slots, on_event, on_tick, python
        self.workers = workers  # each stage's test processes: the cores it takes (run/resources.py)
        self.children: dict[int, _Child] = {}  # by the fd of the child's stdout
        self.done: list[Finished] = []
        self.selector = selectors.DefaultSelector()
        self.signalled: int | None = None  # the signal that interrupted the run
        self.previous: dict[int, Any] = {}  # the handlers the pool's replace while stages run
        self.ticked_at = time.monotonic()

    def mismatch(self, name: StageName) -> str | None:
        return runner_mismatch(name, self.sysinfo)

    def can_start(self, name: StageName) -> bool:
        if self.mismatch(name) is not None:
            return True  # it never starts here: no room to wait for
        return self.signalled is None and self.slots.fits(stage_needs(name, self.workers(name)))

    def running(self) -> int:
        return len(self.children) + len(self.done)

    def cancel(self, reason: str) -> None:
        """Fail-fast: the running stages finish and keep their results (the pipeline starts no new one)."""

    def start(self, ready: ReadyStage) -> None:
        if self.signalled is not None:  # the run was interrupted while the stage was planned
            if not self.children:  # nothing runs to take the interrupt: it is the run's, as serially
                raise interrupts.interrupt_of(self.signalled)
            self.done.append(StageOutcome(ready.plan.name.name, StageState.SKIPPED, NOT_STARTED_INTERRUPTED))
            return
        grant = self.slots.take(stage_needs(ready.plan.name, ready.settings.workers))
        settings = replace(ready.settings, variables={**ready.settings.variables, **self.slots.variables(grant)})
        ready = replace(ready, settings=settings)
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed when the child is read back
        self._catch_signals()
        try:
            process = subprocess.Popen(
                [self.python, "-P", "-c", _PROGRAM, str(_PACKAGE_HOME)],
                cwd=settings.rootdir,
                env=without_history_access(os.environ),  # the session records; the stage never reads the history
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,  # a terminal's Ctrl-C reaches it once, from the pool
                preexec_fn=parent_death.child_preparation(),
            )
        except OSError as error:
            self.slots.give_back(grant)
            stderr.close()
            if not self.children:
                self._restore_signals()
            self.done.append(self._without_result(ready, time.time(), time.monotonic(), f"cannot start: {error}"))
            return
        assert process.stdin is not None and process.stdout is not None
        child = _Child(ready, grant, process, stderr, time.time(), time.monotonic())
        with contextlib.suppress(BrokenPipeError):  # a child that died at once says why on stderr
            process.stdin.write(typed_json.dump(StageJob(ready.plan, settings)).encode())
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        os.set_blocking(process.stdout.fileno(), False)
        self.children[process.stdout.fileno()] = child
        self.selector.register(process.stdout, selectors.EVENT_READ)
        if self.signalled is not None:  # it came while the process started: it missed the forwarding
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, self.signalled)

    def next_finished(self) -> Finished:
        while not self.done:
            for key, _ in self.selector.select(timeout=TICK_SECONDS):
                self._read(self.children[key.fd])
            if time.monotonic() - self.ticked_at >= TICK_SECONDS:
                self.ticked_at = time.monotonic()
                self.on_tick()
        return self.done.pop(0)

    def _read(self, child: _Child) -> None:
        """Pass on the child's complete event lines; at its end, its result."""
        assert child.process.stdout is not None
        try:
            chunk = os.read(child.process.stdout.fileno(), 1 << 16)
        except BlockingIOError:
            return
        *lines, child.buffer = (child.buffer + chunk).split(b"\n")
        for line in lines:
            self._take_line(child, line.decode("utf-8", "replace"))
        if not chunk:
            self._end(child)

    def _take_line(self, child: _Child, line: str) -> None:
        if line.startswith(EVENT_PREFIX):
            event = _json_object(line.removeprefix(EVENT_PREFIX))
            if event is not None:
                self.on_event(child.stage, event)
        elif line.startswith(RESULT_PREFIX):
            try:
                child.result = typed_json.load(
                    line.removeprefix(RESULT_PREFIX), StageResult, file=f"the result of {child.stage}", error=RunError
                )
            except RunError as error:
                child.problems.append(str(error))

    def _end(self, child: _Child) -> None:
        assert child.process.stdout is not None
        self.selector.unregister(child.process.stdout)
        del self.children[child.process.stdout.fileno()]
        child.process.stdout.close()
        code = child.process.wait()
        self.slots.give_back(child.grant)
        said = output_bounds.output_tail(child.stderr).strip().splitlines()
        child.stderr.close()
        if child.result is not None:
            self.done.append(child.result)
        else:
            why = (child.problems or [line.removeprefix("error: ") for line in said[-1:]] or ["no output"])[0]
            reason = f"the stage's process exited with code {code} before its result: {why}"
            self.done.append(self._without_result(child.ready, child.started_at, child.clock, reason))
        if not self.children:
            self._restore_signals()

    def _without_result(self, ready: ReadyStage, started_at: float, clock: float, reason: str) -> StageResult:
        """A stage whose process gave no result: interrupted when the run was, else failed."""
        state = StageState.INTERRUPTED if self.signalled is not None else StageState.FAILED
        plan, settings = ready.plan, ready.settings
        result = StageResult(
            plan.name.name, state, reason, (), (), (), started_at, time.monotonic() - clock, settings.results_dir,
            predicted_seconds=plan.predicted_seconds,
        )  # fmt: skip
        try:
            return write_stage_files(result, plan, settings.run_id)
        except OSError:
            return result

    def stop(self) -> None:
        """End every running stage now (the run ends on an error): SIGTERM, then SIGKILL after a grace. Their
        output is read no more: a stage that writes an event then stops forwarding, never blocks."""
        for child in list(self.children.values()):
            assert child.process.stdout is not None
            self.selector.unregister(child.process.stdout)
            child.process.stdout.close()
            with contextlib.suppress(ProcessLookupError):
                child.process.terminate()
            try:
                child.process.wait(timeout=STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()
            child.stderr.close()
        self.children.clear()
        self._restore_signals()

    # ---------------------------------------------------------------- signals

    def _catch_signals(self) -> None:
        """While stages run, the run's signals go to them (the module docstring); a signal the caller
        ignores stays ignored. Only the main thread may set handlers (a pool elsewhere leaves them)."""
        if self.previous or threading.current_thread() is not threading.main_thread():
            return
        for signum in FORWARDED:
            handler = signal.getsignal(signum)
            if handler not in (signal.SIG_IGN, None):
                self.previous[signum] = signal.signal(signum, self._forward)

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            interrupts.silence_lost_terminal()
        self.signalled = self.signalled or signum
        for child in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.process.pid, signum)

    def _restore_signals(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous.clear()


def _json_object(text: str) -> dict[str, object] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
