from __future__ import annotations

import io

import pytest

from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.run.progress import Progress, ProgressStyle, progress_style

EVENTS = [
    {"event": "collected", "count": 2},
    {"event": "start", "nodeid": "a.py::t1"},
    {"event": "finish", "nodeid": "a.py::t1", "outcome": "passed"},
    {"event": "start", "nodeid": "a.py::t2"},
    {"event": "finish", "nodeid": "a.py::t2", "outcome": "failed"},
]


def _show(tty: bool) -> str:
    stream = io.StringIO()
    progress = Progress(stream, tty=tty)
    progress.stage_started("CPU-Generic-1", 2)
    for event in EVENTS:
        progress.event(event)
    counts = {TestOutcome.PASSED: 1, TestOutcome.FAILED: 1, TestOutcome.SKIPPED: 0}
    progress.stage_finished("CPU-Generic-1", StageState.FAILED, 1.25, counts)
    progress.stage_not_run("A10-PyTorch-1", StageState.WAITING, "needs 1 A10 GPU")
    return stream.getvalue()


def test_plain_lines_when_not_a_terminal() -> None:
    assert _show(tty=False) == (
        "CPU-Generic-1: started (2 list lines)\n"
        "CPU-Generic-1: FAILED a.py::t2\n"
        "CPU-Generic-1: failed in 1.2 s (1 passed, 1 failed, 0 skipped)\n"
        "A10-PyTorch-1: waiting for a runner: needs 1 A10 GPU\n"
    )


def test_bar_on_a_terminal() -> None:
    shown = _show(tty=True)
    assert "\r\x1b[2KCPU-Generic-1 [####################] 2/2  ok 1  fail 1  skip 0  0:00  a.py::t2" in shown
    assert shown.endswith(
        "\r\x1b[2KCPU-Generic-1: failed in 1.2 s (1 passed, 1 failed, 0 skipped)\n"
        "A10-PyTorch-1: waiting for a runner: needs 1 A10 GPU\n"
    )


class Clock:
    """A clock the test moves: no sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


TICK = {"event": "tick"}


def _long_stage(*, tty: bool) -> tuple[io.StringIO, Progress, Clock]:
    """A stage of three tests: t1 starts and runs on, t2 passes beside it, 10 s in."""
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, tty=tty, clock=clock)
    progress.stage_started("CPU-Generic-1", 3)
    progress.event({"event": "collected", "count": 3})
    progress.event({"event": "start", "nodeid": "a.py::t1"})
    clock.now += 10
    progress.event({"event": "start", "nodeid": "a.py::t2"})
    progress.event({"event": "finish", "nodeid": "a.py::t2", "outcome": "passed"})
    return stream, progress, clock


def test_a_long_stage_writes_a_progress_line_a_minute_into_a_log() -> None:
    stream, progress, clock = _long_stage(tty=False)
    shown = []
    for seconds in (49, 1, 30, 30):  # a poll that reads no event ticks
        clock.now += seconds
        progress.event(TICK)
        shown.append(stream.getvalue().splitlines()[-1])
    assert shown == [
        "CPU-Generic-1: started (3 list lines)",
        "CPU-Generic-1: 1/3 tests after 1:00 (1 passed, 0 failed, 0 skipped); running a.py::t1 for 1:00",
        "CPU-Generic-1: 1/3 tests after 1:00 (1 passed, 0 failed, 0 skipped); running a.py::t1 for 1:00",
        "CPU-Generic-1: 1/3 tests after 2:00 (1 passed, 0 failed, 0 skipped); running a.py::t1 for 2:00",
    ]


def test_the_progress_line_names_the_test_running_longest() -> None:
    stream, progress, clock = _long_stage(tty=False)
    progress.event({"event": "finish", "nodeid": "a.py::t1", "outcome": "failed"})
    progress.event({"event": "start", "nodeid": "a.py::t3"})
    clock.now += 55
    progress.event(TICK)
    assert stream.getvalue().splitlines()[-1] == (
        "CPU-Generic-1: 2/3 tests after 1:05 (1 passed, 1 failed, 0 skipped); running a.py::t3 for 0:55"
    )


def test_the_bar_on_a_terminal_gets_no_log_lines() -> None:
    stream, progress, clock = _long_stage(tty=True)
    before = stream.getvalue()
    clock.now += 120
    progress.event(TICK)
    assert "\n" not in stream.getvalue()
    bar = "CPU-Generic-1 [######--------------] 1/3  ok 1  fail 0  skip 0  2:10  a.py::t2"
    assert stream.getvalue()[len(before) :] == "\r\x1b[2K" + bar


AUTO, BAR, LINES = ProgressStyle.AUTO, ProgressStyle.BAR, ProgressStyle.LINES
STYLES = {  # (choice, isatty, environment) -> style
    "a person's terminal": (AUTO, True, {"TERM": "xterm-256color"}, BAR),
    "a pipe or a file": (AUTO, False, {}, LINES),
    "GitHub Actions under act (a terminal)": (AUTO, True, {"GITHUB_ACTIONS": "true"}, LINES),
    "CI": (AUTO, True, {"CI": "true"}, LINES),
    "Jenkins": (AUTO, True, {"JENKINS_URL": "https://ci.example/"}, LINES),
    "a Jenkins build": (AUTO, True, {"BUILD_ID": "12"}, LINES),
    "a dumb terminal": (AUTO, True, {"TERM": "dumb"}, LINES),
    "CI set empty": (AUTO, True, {"CI": ""}, BAR),
    "--progress lines": (LINES, True, {}, LINES),
    "--progress bar in CI": (BAR, False, {"CI": "true"}, BAR),
}


@pytest.mark.parametrize(("choice", "isatty", "environ", "style"), STYLES.values(), ids=STYLES.keys())
def test_the_style_of_progress(
    choice: ProgressStyle, isatty: bool, environ: dict[str, str], style: ProgressStyle
) -> None:
    assert progress_style(choice, isatty=isatty, environ=environ) is style


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_stage_log_under_github_actions_holds_no_terminal_escapes() -> None:
    stream = Terminal()
    progress = Progress.for_stream(stream, ProgressStyle.AUTO, environ={"GITHUB_ACTIONS": "true", "CI": "true"})
    progress.stage_started("CPU-Generic-1", 2)
    for event in EVENTS:
        progress.event(event)
    progress.note("CPU-Generic-1: a note")
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()


def test_with_no_event_the_bar_redraws_once_a_second() -> None:
    stream, progress, clock = _long_stage(tty=True)
    before = stream.getvalue()
    clock.now += 0.5
    progress.event(TICK)
    unchanged = stream.getvalue()
    clock.now += 0.6
    progress.event(TICK)
    assert (unchanged, stream.getvalue()[len(before) :].endswith("0:11  a.py::t2")) == (before, True)


def _two_stages(tty: bool) -> tuple[io.StringIO, Progress, Clock]:
    """Two stages side by side (`--jobs`): one running a long test, the other between events."""
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, tty=tty, clock=clock)
    progress.stage_started("CPU-Generic-1", 3)
    progress.stage_started("CPU-Generic-2", 1)
    progress.stage_event("CPU-Generic-1", {"event": "collected", "count": 3})
    progress.stage_event("CPU-Generic-1", {"event": "start", "nodeid": "a.py::t1"})
    progress.stage_event("CPU-Generic-2", {"event": "collected", "count": 1})
    progress.stage_event("CPU-Generic-2", {"event": "start", "nodeid": "b.py::t1"})
    progress.stage_event("CPU-Generic-2", {"event": "finish", "nodeid": "b.py::t1", "outcome": "failed"})
    return stream, progress, clock


def test_stages_side_by_side_each_log_a_line_a_minute_named_by_stage() -> None:
    stream, progress, clock = _two_stages(tty=False)
    clock.now += 61
    progress.tick()
    assert stream.getvalue().splitlines() == [
        "CPU-Generic-1: started (3 list lines)",
        "CPU-Generic-2: started (1 list line)",
        "CPU-Generic-2: FAILED b.py::t1",
        "CPU-Generic-1: 0/3 tests after 1:01 (0 passed, 0 failed, 0 skipped); running a.py::t1 for 1:01",
        "CPU-Generic-2: 1/1 tests after 1:01 (0 passed, 1 failed, 0 skipped)",
    ]


def test_a_finished_stage_stops_logging_while_the_other_goes_on() -> None:
    stream, progress, clock = _two_stages(tty=False)
    counts = {TestOutcome.PASSED: 0, TestOutcome.FAILED: 1, TestOutcome.SKIPPED: 0}
    progress.stage_finished("CPU-Generic-2", StageState.FAILED, 2.0, counts)
    clock.now += 61
    progress.tick()
    assert stream.getvalue().splitlines()[-2:] == [
        "CPU-Generic-2: failed in 2.0 s (0 passed, 1 failed, 0 skipped)",
        "CPU-Generic-1: 0/3 tests after 1:01 (0 passed, 0 failed, 0 skipped); running a.py::t1 for 1:01",
    ]


def test_the_bar_shows_stages_side_by_side() -> None:
    stream, progress, clock = _two_stages(tty=True)
    clock.now += 2
    progress.tick()
    bar = "2 stages  ok 0  fail 1  skip 0  CPU-Generic-1 0/3  CPU-Generic-2 1/1"
    assert stream.getvalue().endswith("\r\x1b[2K" + bar)


def test_with_several_tests_running_at_once_the_line_counts_them() -> None:
    stream, progress, clock = _long_stage(tty=False)  # xdist workers: t1 and t3 run at once
    progress.event({"event": "start", "nodeid": "a.py::t3"})
    clock.now += 50
    progress.event(TICK)
    assert stream.getvalue().splitlines()[-1] == (
        "CPU-Generic-1: 1/3 tests after 1:00 (1 passed, 0 failed, 0 skipped); running 2 tests, the longest a.py::t1 "
        "for 1:00"
    )
