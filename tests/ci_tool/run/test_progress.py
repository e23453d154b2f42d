from __future__ import annotations

import io

from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.run.progress import Progress

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
