"""The events file a pytest process appends to, read as it grows (ci_tool/run/process.EventReader)."""

from __future__ import annotations

from pathlib import Path

from ci_tool.run.process import EventReader


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
