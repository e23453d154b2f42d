"""Touch records in the history (table `touches`, schema step 5): which test ran which file.

A touch-recording run (`ci-tool run --record-touches`, run/touches.py) replaces what the history holds of
every test it recorded: a test that stopped running a file drops out of that file's record, and tests
the run did not record keep theirs. A file with no row has no record: change-based selection runs the
full set for it (stages/cbts.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from ci_tool.errors import HistoryError, Where
from ci_tool.history import rows
from ci_tool.history.backend import Writer, upsert
from ci_tool.history.store import HistoryStore
from ci_tool.json_file import parse_json
from ci_tool.text_file import read_text

Touches = Mapping[str, frozenset[str]]  # file -> the tests that ran it
_UPSERT = upsert("touches", ("source", "test_id", "run_id", "recorded_at"), ("source", "test_id"))


def record_touches(store: HistoryStore, run_id: str, touches: Touches, *, recorded_at: float) -> None:
    """Store a run's touch records, replacing the recorded tests' earlier rows."""
    tests = sorted({test for found in touches.values() for test in found})
    rows = [(source, test, run_id, recorded_at) for source, found in sorted(touches.items()) for test in sorted(found)]

    def write(db: Writer) -> None:
        db.executemany("DELETE FROM touches WHERE test_id = ?", [(test,) for test in tests])
        db.executemany(_UPSERT, rows)

    store.write(write)


def touched_by(store: HistoryStore, files: Collection[str]) -> dict[str, frozenset[str]]:
    """The recorded tests of each of `files` that has a record."""
    if store.version < 3 or not files:  # an older file read as it is: no records yet
        return {}
    found: dict[str, set[str]] = defaultdict(set)
    bad: set[str] = set()
    raw = store.rows(
        f"SELECT source, test_id FROM touches WHERE source IN ({', '.join('?' * len(files))})", tuple(files)
    )
    for source, test in raw:
        try:
            rows.view(store, "touches", "source, test_id", (source, test)).keyed(source="file").key_text("test_id")
        except rows.BadRowError as error:  # that file then has no record: the full set runs for it, none is lost
            store.warn(f"{error}; file {source!r} is taken as unrecorded")
            bad.add(source)
            continue
        found[source].add(test)
    return {source: frozenset(tests) for source, tests in found.items() if source not in bad}


def read_touch_files(paths: Iterable[Path]) -> dict[str, frozenset[str]]:
    """The touch records the processes of a stage wrote (run/touches.py), merged."""
    found: dict[str, set[str]] = defaultdict(set)
    for path in paths:
        data = parse_json(read_text(path, name="the touch record", error=HistoryError), file=str(path),
                          error=HistoryError)  # fmt: skip
        if not isinstance(data, dict) or not all(isinstance(tests, list) for tests in data.values()):
            raise HistoryError("expected a JSON object of file -> [test id, ...]", where=Where(str(path)))
        for source, tests in data.items():
            found[source] |= {str(test) for test in tests}
    return {source: frozenset(tests) for source, tests in found.items()}
