"""The events file a pytest process appends to, read as it grows (ci_tool/run/process.EventReader)."""

from __future__ import annotations

import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.run.events import EventKind
from ci_tool.run.invocation import RunSettings
from ci_tool.run.process import EventReader
from ci_tool.run.stage_runner import run_stage
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db


def test_a_torn_event_line_is_skipped_and_the_next_events_are_read(tmp_path: Path) -> None:
    events = tmp_path / "p01-main.events.jsonl"
    events.write_text('{"event": "start", "nodeid": "a"}\n{"event": "fin')  # a write a full disk cut short
    reader = EventReader(events)
    first = reader.read()
    with events.open("a") as handle:
        handle.write('{"event": "done"}\n[1, 2]\n{"event": "start", "nodeid": "b"}\n{"event"')
    second = reader.read()
    reader.close()
    assert (first, second) == (
        [{"event": "start", "nodeid": "a"}],
        [{"event": "start", "nodeid": "b"}],
    )


def test_an_events_file_not_there_yet_reads_as_no_events(tmp_path: Path) -> None:
    assert EventReader(tmp_path / "missing.jsonl").read() == []


def test_an_interrupt_landing_while_events_are_read_loses_none_of_them(
    slow_suite: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interrupt (ci-tool's SIGINT/SIGTERM handler raising KeyboardInterrupt) lands just after a read took
    test_slow's start from the file, before it was handed on: the test is still recorded as interrupted."""
    read, interrupts = EventReader.read, []

    def interrupted_after_the_start_of_test_slow(reader: EventReader) -> list[dict[str, object]]:
        events = read(reader)
        started = any(e.get("event") == "start" and str(e.get("nodeid")).endswith("::test_slow") for e in events)
        if started and not interrupts:  # once: the signal lands one time
            interrupts.append(True)
            raise KeyboardInterrupt  # what was read is gone with the frame, as a signal there would leave it
        return events

    monkeypatch.setattr(EventReader, "read", interrupted_after_the_start_of_test_slow)
    db = load_test_db(slow_suite.root / "test-db")
    plan = Planner(db, {}).stage_of_list(parse_stage_name("CPU-Generic-1"), "l0_slow")
    result = run_stage(plan, RunSettings(slow_suite.root, slow_suite.root / "out", "r1"))
    assert [(t.first.nodeid, t.first.outcome, t.first.message) for t in result.tests] == [
        ("cases/case_slow.py::test_quick", TestOutcome.PASSED, ""),
        ("cases/case_slow.py::test_slow", TestOutcome.SKIPPED, "interrupted (Ctrl-C) before the test finished"),
    ]


def test_the_sink_hears_a_tick_on_each_poll_without_events_and_the_results_hold_none(suite: Path) -> None:
    """A poll that read no event still reaches the sink (its clock moves on while a test runs: progress writes
    its line a minute in a log); the ticks are no events of the process."""
    heard: list[str] = []
    db = load_test_db(suite / "test-db")
    plan = Planner(db, {}).stage_of_list(parse_stage_name("CPU-Generic-1"), "l0_green")
    result = run_stage(plan, RunSettings(suite, suite / "out", "r1"), on_event=lambda e: heard.append(str(e["event"])))
    assert EventKind.TICK in heard and {"start", "finish"} <= set(heard)
    assert EventKind.TICK not in (suite / "out" / "parts" / "p01-main.events.jsonl").read_text()
    assert {t.first.outcome for t in result.tests} == {TestOutcome.PASSED}


def test_a_signal_that_comes_as_the_pytest_process_ends_stops_the_stage_all_the_same(suite: Path) -> None:
    """Ctrl-C pressed just as pytest ends (here: when its `done` event is read) is held, not lost: the stage
    ends interrupted, with every test that finished."""

    def press_ctrl_c_at_the_end(event: Mapping[str, object]) -> None:
        if event.get("event") == "done":
            signal.raise_signal(signal.SIGINT)

    db = load_test_db(suite / "test-db")
    plan = Planner(db, {}).stage_of_list(parse_stage_name("CPU-Generic-1"), "l0_green")
    result = run_stage(plan, RunSettings(suite, suite / "out", "r1"), on_event=press_ctrl_c_at_the_end)
    assert (result.state, result.processes[0].interrupted_by) == (StageState.INTERRUPTED, "Ctrl-C")
    assert result.tests and {t.first.outcome for t in result.tests} == {TestOutcome.PASSED}
