"""Touch records in the history (table `touch_records`, schema step TOUCH_STEP): which test ran which units of
which file (change/units.py), on which GPU type, in which stage, at which commit (schema.py has the table).

    source, test_id       a repository-relative file, and the pytest node id of a test that ran a line of it
                          (setup and teardown included)
    gpu_type              where it ran (StageName.gpu_type: `DGX_H100`, `CPU`); one row per file, test and
                          GPU type
    units                 the units of the file it ran (`BlockPool.allocate`, `<module>`), one a line: a row
                          per unit would be about 4.6 times as many (this repository's own suite)
    stage, commit_sha     the stage that recorded it, and the commit the run tested; '' when the file
                          differed from it (an uncommitted edit): such a record is stale from the start
    run_id, recorded_at   the run that made it, and when

Readers see one TouchRow per unit. A touch-recording run replaces, per GPU type, the rows of every test it
recorded: a test that stopped running a unit drops out of that unit's record, and tests the run did not
record keep theirs, unless the run ran their whole stage without them (WholeStage: the test is gone).
What ran outside the tests (OUTSIDE_TESTS: imports while collecting) is kept per stage, under a test id
that names it (`<outside tests> CPU-Generic-1`; readers see OUTSIDE_TESTS): two stages of one GPU type
import different modules, and one stage's record must not replace the other's. Only a whole stage's run
replaces its stage's; a part of it (`-k`, a narrowed stage) collects only some modules, so it adds its
units to each file's row and leaves the row's commit as it was (the row stays as stale as it was). When a
record counts, and when it is stale, is the change's business (change/touch_evidence.py). The file-grain rows
of step 5 (`touches`) were copied in with units, stage and GPU type unknown ('') and commit '': no stage's GPU
type is '', so they never narrow a stage; the old table stays as it was.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tool.change.touch_records import OUTSIDE_TESTS
from ci_tool.errors import HistoryError, Where
from ci_tool.history import rows
from ci_tool.history.backend import Writer, upsert
from ci_tool.history.schema import TOUCH_STEP
from ci_tool.history.store import HistoryStore
from ci_tool.json_file import parse_json
from ci_tool.text_file import read_text

_COLUMNS = ("source", "test_id", "gpu_type", "units", "stage", "commit_sha", "run_id", "recorded_at")
_UPSERT = upsert("touch_records", _COLUMNS, ("source", "test_id", "gpu_type"))
_UNITS = "\n"  # between a row's units (no qualified name holds a line break)
_CHUNK = 500  # `IN (?, ...)` marks a statement takes (SQLite allows 32766; PostgreSQL 65535)

UnitTouches = Mapping[tuple[str, str], frozenset[str]]  # (file, unit) -> the tests that ran it


@dataclass(frozen=True)
class TouchRow:
    """One touch record (see the module docstring)."""

    source: str
    unit: str
    test_id: str
    gpu_type: str
    stage: str
    commit: str


def stamped(
    touches: UnitTouches, *, stage: str, gpu_type: str, commit: str, dirty: Collection[str] = ()
) -> list[TouchRow]:
    """The records a stage's touch files hold, stamped with where and at which commit they were made: a file
    among `dirty` (the work tree differs from `commit` there) is stamped '', stale from the start."""
    return [
        TouchRow(source, unit, test, gpu_type, stage, "" if source in dirty else commit)
        for (source, unit), tests in sorted(touches.items())
        for test in sorted(tests)
    ]


@dataclass(frozen=True)
class WholeStage:
    """Every test a whole stage ran on one GPU type (passed, failed or skipped, reused ones too): a record of
    that stage and GPU type naming another test names one that is gone, deleted or moved to another stage."""

    stage: str
    gpu_type: str
    tests: frozenset[str]


_RowKey = tuple[str, str, str, str, str]  # source, stored test id, GPU type, stage, commit


def record_touches(
    store: HistoryStore, run_id: str, records: Sequence[TouchRow], *, recorded_at: float,
    whole_stage: WholeStage | None = None,
) -> None:
    """Store a stage's touch records, replacing the earlier rows of each recorded test on its GPU type; with
    `whole_stage`, also drop that stage's rows of tests it no longer has (a test without records counts as
    unrecorded and runs, so dropping never loses a test; keeping them would grow the history for ever)."""
    units: dict[_RowKey, set[str]] = defaultdict(set)
    for r in records:
        units[r.source, _stored_test(r.test_id, r.stage), r.gpu_type, r.stage, r.commit].add(r.unit)
    tests = sorted({(test, gpu_type) for _, test, gpu_type, _, _ in units})
    replaced = [key for key in tests if whole_stage is not None or not is_outside(key[0])]

    def write(db: Writer) -> None:
        if whole_stage is not None:
            key = (whole_stage.stage, whole_stage.gpu_type)
            kept = db.execute("SELECT DISTINCT test_id FROM touch_records WHERE stage = ? AND gpu_type = ?", key)
            gone = [(test, *key) for (test,) in kept.fetchall() if _read_test(test) not in whole_stage.tests]
            db.executemany("DELETE FROM touch_records WHERE test_id = ? AND stage = ? AND gpu_type = ?", gone)
        db.executemany("DELETE FROM touch_records WHERE test_id = ? AND gpu_type = ?", replaced)
        db.executemany("DELETE FROM touch_records WHERE test_id = ? AND gpu_type = ?", _unstaged(tests))
        merged = _merged_outside(db, units) if whole_stage is None else units
        db.executemany(_UPSERT, [
            (source, test, gpu_type, _UNITS.join(sorted(found)), stage, commit, run_id, recorded_at)
            for (source, test, gpu_type, stage, commit), found in sorted(merged.items())
        ])  # fmt: skip

    store.write(write)


def is_outside(test_id: str) -> bool:
    """Whether a stored test id is a stage's record of what ran outside its tests (see the module docstring)."""
    return test_id == OUTSIDE_TESTS or test_id.startswith(f"{OUTSIDE_TESTS} ")


def _stored_test(test_id: str, stage: str) -> str:
    return f"{OUTSIDE_TESTS} {stage}" if test_id == OUTSIDE_TESTS else test_id


def _read_test(stored: str) -> str:
    return OUTSIDE_TESTS if is_outside(stored) else stored


def _unstaged(tests: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The rows an older ci-tool wrote for what ran outside the tests on the GPU types a run records it on
    (one for all stages): the stage-named rows replace them."""
    return sorted({(OUTSIDE_TESTS, gpu_type) for test, gpu_type in tests if is_outside(test)})


def _merged_outside(db: Writer, units: Mapping[_RowKey, set[str]]) -> dict[_RowKey, set[str]]:
    """A part of a stage's run: its outside rows added to the stage's rows already there, at their commit (one
    query per stage and GPU type, not one per file)."""
    merged = dict(units)
    there: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}  # (test, GPU type) -> source -> units, commit
    for key, found in units.items():
        source, test, gpu_type, stage, _ = key
        if not is_outside(test):
            continue
        if (test, gpu_type) not in there:
            rows = db.execute(
                "SELECT source, units, commit_sha FROM touch_records WHERE test_id = ? AND gpu_type = ?",
                (test, gpu_type),
            ).fetchall()
            there[test, gpu_type] = {str(row[0]): (str(row[1]), str(row[2])) for row in rows}
        if source in there[test, gpu_type]:
            old_units, old_commit = there[test, gpu_type][source]
            del merged[key]
            merged[source, test, gpu_type, stage, old_commit] = found | set(old_units.split(_UNITS))
    return merged


def has_touch_records(store: HistoryStore) -> bool:
    """Whether the history has the table (an older file read as it is has none)."""
    return store.version >= TOUCH_STEP


def rows_of_files(store: HistoryStore, files: Collection[str]) -> tuple[list[TouchRow], set[str]]:
    """The records of `files` on every GPU type, and the files a bad row spoils (unrecorded then: the full
    set runs for them, so none is lost)."""
    found: list[TouchRow] = []
    bad: set[str] = set()
    for chunk in _chunks(sorted(files)):
        raw = store.rows(
            "SELECT source, test_id, gpu_type, units, stage, commit_sha FROM touch_records "
            f"WHERE source IN ({', '.join('?' * len(chunk))})",
            tuple(chunk),
        )
        for row in raw:
            try:
                found += _touch_rows(store, row)
            except rows.BadRowError as error:
                store.warn(f"{error}; file {row[0]!r} is taken as unrecorded")
                bad.add(str(row[0]))
    return [row for row in found if row.source not in bad], bad


def record_commits(store: HistoryStore) -> dict[str, frozenset[str]]:
    """Per GPU type, the commits its records were made at. A bad GPU type or commit is left out with a
    warning that names one of its rows (rows_of_files takes a changed file with such a row as unrecorded)."""
    raw = store.rows(
        "SELECT gpu_type, commit_sha, min(source), min(test_id) FROM touch_records GROUP BY gpu_type, commit_sha"
    )
    found: dict[str, set[str]] = defaultdict(set)
    for gpu_type, commit in rows.read(store, raw, functools.partial(_made_at, store), skip=True):
        if gpu_type:  # step 5's rows: made nowhere known
            found[gpu_type].add(commit)
    return {gpu_type: frozenset(commits) for gpu_type, commits in found.items()}


def _made_at(store: HistoryStore, row: Sequence[object]) -> tuple[str, str]:
    """A GPU type and a commit its records were made at (the row: one record of them, to name it by)."""
    keyed = rows.view(store, "touch_records", "gpu_type, commit_sha, source, test_id", row).keyed(
        source="file", test_id="test"
    )
    return keyed.text("gpu_type"), keyed.commit("commit_sha")


def touching_tests(store: HistoryStore, *, gpu_type: str, commit: str, files: Collection[str] | None) -> frozenset[str]:
    """The tests whose records on `gpu_type` made at `commit` touch one of `files` (None: any file)."""
    query = "SELECT DISTINCT test_id FROM touch_records WHERE gpu_type = ? AND commit_sha = ?"
    if files is None:
        raw = store.rows(query, (gpu_type, commit))
    else:
        raw = []
        for chunk in _chunks(sorted(files)):
            marks = ", ".join("?" * len(chunk))
            raw += store.rows(f"{query} AND source IN ({marks})", (gpu_type, commit, *chunk))
    return frozenset(_read_test(test) for (test,) in raw if isinstance(test, str) and test)


def recorded_tests(store: HistoryStore, *, gpu_type: str) -> frozenset[str]:
    """Every test with a record on `gpu_type`."""
    raw = store.rows("SELECT DISTINCT test_id FROM touch_records WHERE gpu_type = ?", (gpu_type,))
    return frozenset(_read_test(test) for (test,) in raw if isinstance(test, str) and test)


def tests_with_unit(store: HistoryStore, *, gpu_type: str, unit: str) -> frozenset[str]:
    """The tests whose records on `gpu_type` hold `unit` in some file."""
    query = "SELECT test_id, units FROM touch_records WHERE gpu_type = ? AND units LIKE ?"
    raw = store.rows(query, (gpu_type, f"%{unit}%"))
    found = (test for test, units in raw if isinstance(units, str) and unit in units.split(_UNITS))
    return frozenset(_read_test(test) for test in found if isinstance(test, str) and test)


def _touch_rows(store: HistoryStore, row: Sequence[object]) -> list[TouchRow]:
    view = rows.view(store, "touch_records", "source, test_id, gpu_type, units, stage, commit_sha", row)
    keyed = view.keyed(source="file", test_id="test")
    source, test, gpu_type = keyed.key_text("source"), keyed.key_text("test_id"), keyed.text("gpu_type")
    stage, commit = keyed.text("stage"), keyed.commit("commit_sha")
    test = _read_test(test)
    return [TouchRow(source, unit, test, gpu_type, stage, commit) for unit in keyed.text("units").split(_UNITS)]


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def read_touch_files(paths: Iterable[Path]) -> dict[tuple[str, str], frozenset[str]]:
    """The touch records the processes of a stage wrote (run/touch_recorder.py), merged: (file, unit) -> tests."""
    found: dict[tuple[str, str], set[str]] = defaultdict(set)
    for path in paths:
        data = parse_json(read_text(path, name="the touch record", error=HistoryError), file=str(path),
                          error=HistoryError)  # fmt: skip
        for (source, unit), tests in _touch_file(data, path).items():
            found[source, unit] |= tests
    return {key: frozenset(tests) for key, tests in found.items()}


def _touch_file(data: object, path: Path) -> dict[tuple[str, str], set[str]]:
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list) or not isinstance(data.get("files"), dict):
        found = f"an object with keys {sorted(data)}" if isinstance(data, dict) else f"a JSON {type(data).__name__}"
        raise _shape_error(path, found)
    tests = [str(test) for test in data["tests"]]
    touches: dict[tuple[str, str], set[str]] = {}
    for source, units in data["files"].items():
        if not isinstance(units, dict):
            raise _shape_error(path, f"{units!r} for file {source!r}")
        for unit, indexes in units.items():
            if not isinstance(indexes, list) or not all(isinstance(i, int) and 0 <= i < len(tests) for i in indexes):
                raise _shape_error(path, f"{indexes!r} for file {source!r}, unit {unit!r}")
            touches[source, unit] = {tests[index] for index in indexes}
    return touches


def _shape_error(path: Path, found: str) -> HistoryError:
    return HistoryError(
        'expected a JSON object {"tests": [test id, ...], "files": {file: {unit: [test index, ...]}}}, '
        f"found {found}",
        where=Where(str(path)),
        hint="the touch-recording plugin (ci_tool.run.touch_recorder) writes it; run the stage again",
    )
