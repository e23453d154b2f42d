"""What the touch records say about a change, as change-based selection reads it (the touched rule, stages/cbts.py and
touched_rule.py). Pure values: change/touch_evidence.py reads them from the history and git.

Records are kept per GPU type (StageName.gpu_type): a GPU stage never reads a CPU stage's records. A record
is one (file, unit, test, GPU type, commit): the test ran a line of that unit (change/units.py) in a stage
of that GPU type, in a run of that commit. OUTSIDE_TESTS stands for the lines a stage ran outside any test
(imports while collecting, a module-scoped fixture's teardown): what they make, every test may read.

Staleness, for a change whose base is B:

    a record made at commit C counts as unrecorded when its file changed between C and B (git), when C
      is not in the local clone, or when C is '' (made on an uncommitted edit), until a run records it
      again; a changed file with such a record on a GPU type is unrecorded there (so is a file no record of
      the GPU type ran that changed since its records were made): those stages run the test paths that can
      load it (its import reach, change/import_reach.py);
    a test with a stale record (any file it ran changed since its record) may now run other code: its
      test file runs on the stages of that GPU type (a test file itself changed since the records: the
      same) where it can load a file the change edits.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ci_tool.change.units import MODULE_UNIT, UnitChange

OUTSIDE_TESTS = "<outside tests>"  # the "test" of what a stage ran outside its tests
UNMEASURED = "<unmeasured>"  # the unit a test that ran unmeasured (`timed`) records in its own test file


@dataclass(frozen=True)
class GpuRecord:
    """A changed file's fresh records on one GPU type: unit -> the tests that ran it, and the commits they
    were made at (newest first as the history lists them)."""

    units: Mapping[str, frozenset[str]]
    commits: tuple[str, ...]

    def tests_of(self, units: Collection[str]) -> frozenset[str]:
        """The tests that ran any of `units` (OUTSIDE_TESTS among them when a stage ran one outside a test)."""
        return frozenset(test for unit in units for test in self.units.get(unit, frozenset()))

    @property
    def tests(self) -> frozenset[str]:
        """The tests that ran any unit of the file."""
        return self.tests_of(self.units)


@dataclass(frozen=True)
class RecordedFile:
    """A changed Python file (a test file only where it has records): what the change does to it unit by unit,
    its fresh record per GPU type (none where no record of that GPU type ran it), why the others do not count
    (GPU type -> reason), and the test paths that can load it."""

    path: str
    change: UnitChange
    records: Mapping[str, GpuRecord] = field(default_factory=dict)
    stale: Mapping[str, str] = field(default_factory=dict)
    read_from: tuple[str, ...] = ()  # a file the change leaves as it is: the changed files it reads names of
    importers: tuple[str, ...] = ()  # the test paths that can load the file (its import reach, change/import_reach.py)
    importers_unknown: str = ""  # why those are not known ("" when they are, or were not looked for)
    importers_read: bool = False  # whether they were looked for

    @property
    def unrecorded(self) -> str:
        """Why no record can narrow for this change ("" when one can): a file the change cannot be mapped in, a
        change of module-level code (it runs at import, outside the tests) whose importers are not known, or a
        unit the change adds while they are not known. A new def's header runs at import (a def nested in a
        function is its function's: change/units.py), so the change reaches module-level code: every test
        that ran a unit of the file and every test path that imports it run, and code that can call the new
        unit is either the file's, which those tests ran, or another file's, which imports it."""
        if self.change.undecided:
            return self.change.undecided
        new = _names(self.change.new)
        if self.change.new and not (self.at_import and self.importers_read):  # importers stand for what calls it
            return f"it adds {new}: no record knows {'them' if len(self.change.new) > 1 else 'it'}"
        if self.at_import and self.importers_unknown:
            what = f"it adds {new}, whose def runs" if self.change.new else "it edits module-level code, which runs"
            return f"{what} at import, outside the tests, and {self.importers_unknown}"
        return ""

    @property
    def reach_known(self) -> bool:
        """Whether the test paths that can load the file were looked for and are known (`importers`)."""
        return self.importers_read and not self.importers_unknown

    @property
    def at_import(self) -> bool:
        """Whether the change reaches code that runs at import (its module-level code, or a module-level read of
        a name another file changes): the test paths that import the file run, and every test that ran a unit
        of it (what its module-level code binds, any of them may read)."""
        return MODULE_UNIT in self.change.units

    def runs_at_import(self) -> bool:
        """Whether the change reaches code that runs at import: its module-level code (at_import), or a function
        it edits that a record shows running outside the tests (while pytest collected, called by some module's
        import-time code: a module that imports this file). Either way the test paths that import the file
        stand for what no record can attribute."""
        functions = [unit for unit in self.change.units if unit != MODULE_UNIT]
        ran_outside = any(OUTSIDE_TESTS in record.tests_of(functions) for record in self.records.values())
        return self.at_import or ran_outside

    def edited_units(self, record: GpuRecord) -> tuple[str, ...]:
        """The units whose tests a change reaches on `record`'s GPU type: every unit of the file when the change
        runs at import (at_import), else the units it edits."""
        return tuple(record.units) if self.at_import else self.change.units

    def touched_by(self) -> frozenset[str]:
        """The tests whose fresh records, on any GPU type, ran a unit the change edits."""
        found = frozenset().union(*(record.tests_of(self.edited_units(record)) for record in self.records.values()))
        return frozenset(found - {OUTSIDE_TESTS})


@dataclass(frozen=True)
class GpuRecords:
    """A GPU type's records as a whole: the commits they were made at, the files of its tests whose records
    are stale, the files changed between those commits and the base (both as they exist at the head), the
    tests it ran unmeasured, and the test files none of its records ran (a stage that never recorded, a
    test it never ran): all of these run on its stages whatever the change."""

    commits: tuple[str, ...]
    stale_test_files: tuple[str, ...] = ()
    changed_since: tuple[str, ...] = ()
    unmeasured: tuple[str, ...] = ()  # tests its records ran unmeasured (`timed`): what they run is unknown
    unrecorded_test_files: tuple[str, ...] = ()  # test files (at the head) none of its records ran


@dataclass(frozen=True)
class AddedFile:
    """A Python file the change adds (no record can know it), and the files that load it: those that import it
    or spell its dotted name (change/import_reach.loading_files)."""

    path: str
    loaded_by: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()  # among them, the files the change leaves as they are

    @property
    def unrecorded(self) -> str:
        """Why no record can narrow for it ("" when one can): a file the change leaves as it is loads it, and what
        that file does with it now, no record knows. Else it runs only through files the change edits, whose
        records select the tests that reach it."""
        if not self.unchanged:
            return ""
        others = f" and {len(self.unchanged) - 1} more" if len(self.unchanged) > 1 else ""
        return f"it is new, and {self.unchanged[0]}{others}, which the change leaves as it is, load(s) it"


@dataclass(frozen=True)
class TouchEvidence:
    """The touch records of a change (none while no GPU type has records): each changed Python file, a test
    file or conftest.py only where it has records; every GPU type that has records; the other files that read
    a name a changed file exports (its public constants, classes and kernels) with the units there that read
    it; and the Python files the change adds."""

    files: Mapping[str, RecordedFile] = field(default_factory=dict)
    gpu_types: Mapping[str, GpuRecords] = field(default_factory=dict)
    readers: Mapping[str, RecordedFile] = field(default_factory=dict)  # other files reading what they export
    added: Mapping[str, AddedFile] = field(default_factory=dict)  # new Python files, test files excepted


def _names(units: Collection[str]) -> str:
    shown = sorted(units)
    return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
