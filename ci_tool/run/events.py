"""The events a stage's pytest process appends to its `--events` file, one JSON object a line with its kind
under "event": run/plugin.py writes them; run/process.py (what ended the process) and run/progress.py
(the progress line) read them.

    collected  the list's tests are collected        count
    start      a test starts                         nodeid, time, timeout (a worker's, under pytest-xdist)
    timeout    a worker's test is about to time out  nodeid (its controller then tells a timeout from a crash)
    finish     a test's result                       nodeid, outcome, seconds
    done       the session ended (the controller's)
"""

from __future__ import annotations

import enum


class EventKind(enum.StrEnum):
    """The "event" of one line of an events file (the value is what the line holds)."""

    COLLECTED = "collected"
    START = "start"
    TIMEOUT = "timeout"
    FINISH = "finish"
    DONE = "done"
    # What the sink hears on a poll that read no event: its clock moves on while a test runs (run/progress.py
    # writes a log line at least once a minute). Not an event of the child's: never in an events file.
    TICK = "tick"
