"""The touch records of a change, read from the history and judged against git (the staleness rule is
change/touch_records.py's docstring): the TouchEvidence the touched rule narrows by.

    touch_evidence(store, root, base=B, head=H, files=F, deleted=D)
        B   the change's base commit (the merge base)
        H   the commit the change ends at (None: the work tree)
        F   the changed paths; D those the change removes

Per changed Python file (a test file or conftest.py only where it has records: the tests rule runs it, and
its records put the tests that ran what the change edits first): its units at B and H and the hunks between
(change/units.py), per GPU type with records whether its records there are fresh (a file none of them ran
counts as fresh when it did not change since they were made), and the test paths that can load it (its
import reach, change/import_reach.py: a few `git grep`s, each file read once). Per GPU type: the commits its
records were made at, the files of its tests whose records are stale, and the files changed since those
commits. One `git diff --name-only` per commit the records name, one `git diff -U0` per changed file, and
one `git grep` for the names a change may export to other files (change/units.py: a public constant or
class, a public kernel, an __init__.py's imports): the units of another Python file that read one are
edited too (they read what the change made), its module-level code where it reads one at import. A Python
file the change adds (not a test file, which the tests rule runs) has no record; what loads it does
(change/import_reach.py, one `git grep`): when every such file is one the change edits too, the
new file runs only through them, and their own records select its tests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ci_tool import gitinfo
from ci_tool.change.import_reach import ImportIndex
from ci_tool.change.python_tree import Unreadable
from ci_tool.change.touch_records import (
    OUTSIDE_TESTS,
    UNMEASURED,
    AddedFile,
    GpuRecord,
    GpuRecords,
    RecordedFile,
    TouchEvidence,
)
from ci_tool.change.units import UnitChange, changed_units, parse_hunks, source_units
from ci_tool.change.value import is_test_file, test_path_of
from ci_tool.history.store import HistoryStore
from ci_tool.history.touch_table import (
    TouchRow,
    has_touch_records,
    record_commits,
    recorded_tests,
    rows_of_files,
    tests_with_unit,
    touching_tests,
)

_DAMAGED = "a record of it is damaged"


class _Commits:
    """What changed between each commit the records name and the base (None: the commit cannot be compared:
    '' or not in this clone)."""

    def __init__(self, root: Path, base: str) -> None:
        self.root, self.base = root, base
        self.known: dict[str, frozenset[str] | None] = {}

    def changed_since(self, commit: str) -> frozenset[str] | None:
        if commit not in self.known:
            fresh = gitinfo.has_commit(self.root, commit)
            self.known[commit] = gitinfo.changed_between(self.root, commit, self.base) if fresh else None
        return self.known[commit]

    def why_stale(self, commit: str, path: str) -> str:
        """Why a record of `path` made at `commit` is stale ("" when it is fresh)."""
        if not commit:
            return "made on an uncommitted edit"
        changed = self.changed_since(commit)
        if changed is None:
            return f"its commit {commit[:12]} is not in this clone"
        return f"{path} changed since {commit[:12]}" if path in changed else ""


def touch_evidence(
    store: HistoryStore, root: Path, *, base: str, head: str | None, files: Sequence[str], deleted: Collection[str]
) -> TouchEvidence:
    """The touch records of the change base..head (see the module docstring)."""
    made_at = record_commits(store) if has_touch_records(store) else {}
    if not made_at:  # no GPU type has recorded: the touched rule claims nothing
        return TouchEvidence()
    commits = _Commits(root, base)
    at_base = gitinfo.files_at(root, base)
    python = [path for path in files if path.endswith(".py") and path in at_base]
    by_file, bad = _rows_by_file(store, python)
    # a test file or conftest.py only with records: the tests rule runs it, its records order the tests first
    judged = [path for path in python if test_path_of(path) is None or path in by_file or path in bad]
    changes = {path: file_change(root, path, base=base, head=head) for path in judged if path not in bad}
    recorded = {
        path: _recorded_file(path, by_file[path], change.change, commits, made_at) for path, change in changes.items()
    }
    recorded |= {path: RecordedFile(path, UnitChange(undecided=_DAMAGED)) for path in bad}
    readers = _readers(store, changes, commits, made_at)
    index = ImportIndex(root, head)
    recorded, readers = (
        {path: _with_importers(found, index) for path, found in files.items()} for files in (recorded, readers)
    )
    present = (at_base - set(deleted)) | (set(files) - set(deleted))
    gpu_types = {
        gpu_type: _gpu_records(store, gpu_type, sorted(found), commits, present)
        for gpu_type, found in sorted(made_at.items())
    }
    added = [path for path in files if path.endswith(".py") and path not in at_base and path not in deleted]
    return TouchEvidence(recorded, gpu_types, readers, _added(index, added, files))


def _added(index: ImportIndex, added: Sequence[str], files: Sequence[str]) -> dict[str, AddedFile]:
    """Each new Python file that is not a test file, and the files that load it (see the module docstring)."""
    found = {}
    for path in added:
        if not is_test_file(path):
            loading = index.loading_files(path)
            found[path] = AddedFile(path, loading, tuple(other for other in loading if other not in files))
    return found


def _with_importers(found: RecordedFile, index: ImportIndex) -> RecordedFile:
    """`found` with the test paths that can load it (change/import_reach.py), where the change can be judged."""
    if found.change.undecided:
        return found
    reach = index.importing_tests(found.path)
    return replace(found, importers=reach.paths, importers_unknown=reach.unknown, importers_read=True)


def _readers(
    store: HistoryStore, changes: Mapping[str, FileChange], commits: _Commits, made_at: Mapping[str, Collection[str]]
) -> dict[str, RecordedFile]:
    """The other files that read what the changes export, each as a change of its reading units."""
    units: dict[str, set[str]] = defaultdict(set)
    read_from: dict[str, set[str]] = defaultdict(set)
    for path, change in changes.items():
        for other, reading in change.readers.items():
            units[other] |= reading
            read_from[other].add(path)
    by_file, bad = _rows_by_file(store, sorted(units))
    found = {}
    for other in sorted(units):
        them = tuple(sorted(units[other]))
        edit = UnitChange(undecided=_DAMAGED) if other in bad else UnitChange(them, through=them)
        found[other] = _recorded_file(other, by_file[other], edit, commits, made_at, tuple(sorted(read_from[other])))
    return found


def _rows_by_file(store: HistoryStore, files: Sequence[str]) -> tuple[dict[str, list[TouchRow]], set[str]]:
    """The records of `files` by file, and the files a bad row spoils."""
    rows, bad = rows_of_files(store, files)
    by_file: dict[str, list[TouchRow]] = defaultdict(list)
    for row in rows:
        if row.gpu_type:  # step 5's rows: made nowhere known
            by_file[row.source].append(row)
    return by_file, bad


def _recorded_file(
    path: str,
    rows: Sequence[TouchRow],
    change: UnitChange,
    commits: _Commits,
    made_at: Mapping[str, Collection[str]],
    read_from: tuple[str, ...] = (),
) -> RecordedFile:
    """One file's unit change, and per GPU type with records (`made_at`: GPU type -> the commits its records
    were made at) its fresh record, or why it has none: its rows are stale, or none of its records ran the
    file and the file changed since they were made."""
    records: dict[str, GpuRecord] = {}
    stale: dict[str, str] = {}
    for gpu_type in sorted(set(made_at) | {row.gpu_type for row in rows}):
        mine = [row for row in rows if row.gpu_type == gpu_type]
        made = [row.commit for row in mine] if mine else list(made_at.get(gpu_type, ()))
        why = next((reason for commit in made if (reason := commits.why_stale(commit, path))), "")
        if why:
            stale[gpu_type] = why
        if why or not mine:
            continue
        units: dict[str, set[str]] = defaultdict(set)
        for row in mine:
            units[row.unit].add(row.test_id)
        tests_of = {unit: frozenset(tests) for unit, tests in units.items()}
        records[gpu_type] = GpuRecord(tests_of, tuple(sorted(set(made))))
    return RecordedFile(path, change, records, stale, read_from)


@dataclass(frozen=True)
class FileChange:
    """What a change does to one Python file (change/units.py), and, for each other file that reads a name
    it exports, the units there that read it."""

    change: UnitChange
    readers: Mapping[str, frozenset[str]] = field(default_factory=dict)


def file_change(root: Path, path: str, *, base: str, head: str | None) -> FileChange:
    """What the change base..head (head None: the work tree) does to the Python file `path`, unit by unit,
    and the units of other Python files at the head that read a name it exports; undecided where one of
    those reads it at import (module-level code) or does not parse."""
    at_base = gitinfo.file_at(root, base, path)
    at_head = _text_at(root, head, path)
    hunks = parse_hunks(gitinfo.line_diff(root, base, head, path))
    change = changed_units(at_base, at_head, hunks, package_init=_is_init(path))
    readers: dict[str, frozenset[str]] = {}
    names = ", ".join(f"`{name}`" for name in change.exported)
    importers = sorted(gitinfo.files_naming(root, head, change.unbound, "*.py") - {path})
    if importers:  # `from path import NAME` there no longer imports
        gone = ", ".join(f"`{name}`" for name in change.unbound)
        why = f"it removes {gone}, which {importers[0]} still names"
        return FileChange(replace(change, undecided=why))
    for other in sorted(gitinfo.files_naming(root, head, change.exported, "*.py") - {path}):
        text = _text_at(root, head, other)
        units = source_units(text) if text is not None else Unreadable("cannot be read")
        if isinstance(units, Unreadable):
            why = f"it changes {names}, which {other} names, and {other} {units.why}"
            return FileChange(replace(change, undecided=why))
        found = units.readers_elsewhere(change.exported)
        if found:
            readers[other] = frozenset(found)
    return FileChange(change, readers)


def _is_init(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == "__init__.py"


def _gpu_records(
    store: HistoryStore, gpu_type: str, made_at: Sequence[str], commits: _Commits, present: Collection[str]
) -> GpuRecords:
    """A GPU type's records as a whole: which of its tests are stale, and what changed since they were made."""
    stale: set[str] = set()
    changed: set[str] = set()
    for commit in made_at:
        since = commits.changed_since(commit)
        if since is None:  # nothing of this commit can be compared: every test recorded there is stale
            stale |= touching_tests(store, gpu_type=gpu_type, commit=commit, files=None)
            continue
        changed |= since
        stale |= touching_tests(store, gpu_type=gpu_type, commit=commit, files=since)
    test_files = {test.split("::", 1)[0] for test in stale if test != OUTSIDE_TESTS}
    ran = {test.split("::", 1)[0] for test in recorded_tests(store, gpu_type=gpu_type)}
    return GpuRecords(
        tuple(made_at),
        tuple(sorted(path for path in test_files if path in present)),
        tuple(sorted(path for path in changed if path in present)),
        tuple(sorted(tests_with_unit(store, gpu_type=gpu_type, unit=UNMEASURED))),
        tuple(sorted(path for path in present if is_test_file(path) and path not in ran)),
    )


def _text_at(root: Path, head: str | None, path: str) -> str | None:
    return gitinfo.texts_at(root, head, [path])[path]
