"""The touched rule's plan per GPU type (change/touched_rule.py), on tiny evidence values."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ci_tool.change.narrowing import NarrowPath
from ci_tool.change.touch_records import AddedFile, GpuRecord, GpuRecords, RecordedFile, TouchEvidence
from ci_tool.change.touched_rule import TouchedPlan, plan_touched
from ci_tool.change.units import UnitChange

POOL = "src/pool.py"
C1, C2 = "1" * 40, "2" * 40
ALLOCATE = UnitChange(("Pool.allocate",))
RECORDS = {
    "CPU": GpuRecord(
        {
            "Pool.allocate": frozenset({"tests/test_pool.py::test_a[x y]", "tests/test_pool.py::test_b"}),
            "Pool.free": frozenset({"tests/test_pool.py::test_c"}),
        },
        (C1,),
    ),
    "A10": GpuRecord({"Pool.allocate": frozenset({"tests/test_gpu.py::test_g"})}, (C1, C2)),
}
EVERYWHERE = {"CPU": GpuRecords((C1,)), "A10": GpuRecords((C1, C2))}


def plan(found: RecordedFile, gpu_types: dict[str, GpuRecords] | None = None) -> TouchedPlan:
    evidence = TouchEvidence({found.path: found}, EVERYWHERE if gpu_types is None else gpu_types)
    return plan_touched(evidence, [found.path], ["A10", "CPU"], test_path=lambda path: None)


def test_each_gpu_type_runs_the_tests_its_records_say_ran_the_edited_unit() -> None:
    found = plan(RecordedFile(POOL, ALLOCATE, RECORDS))
    assert (found.paths, found.full, found.undecided) == (
        {
            "A10": [NarrowPath("tests/test_gpu.py::test_g")],
            "CPU": [NarrowPath("tests/test_pool.py::test_a"), NarrowPath("tests/test_pool.py::test_b")],
        },
        {},
        [],
    )


def test_each_gpu_type_says_why_in_one_line() -> None:
    assert plan(RecordedFile(POOL, ALLOCATE, RECORDS)).reasons == [
        f"{POOL}:Pool.allocate: touched rule: runs the 1 test(s) that ran it on A10 records from 111111111111, "
        "222222222222",
        f"{POOL}:Pool.allocate: touched rule: runs the 2 test(s) that ran it on CPU records from 111111111111",
    ]


EVERY_TEST = "every test loads it (ci_tool.run.plugin is loaded into every pytest)"
NO_RECORD_TELLS = {
    "stale": (
        RecordedFile(POOL, ALLOCATE, {"CPU": RECORDS["CPU"]}, {"A10": f"{POOL} changed since 111111111111"}),
        EVERYWHERE,
        f"its A10 records are stale: {POOL} changed since 111111111111",
    ),
    "no-records": (RecordedFile(POOL, ALLOCATE, {"CPU": RECORDS["CPU"]}), {"CPU": EVERYWHERE["CPU"]}, "no A10 records"),
}


@pytest.mark.parametrize(("found", "gpu_types", "why"), list(NO_RECORD_TELLS.values()), ids=list(NO_RECORD_TELLS))
def test_a_gpu_type_no_record_speaks_for_runs_the_test_paths_that_can_load_the_file(
    found: RecordedFile, gpu_types: dict[str, GpuRecords], why: str
) -> None:
    """What cannot import the file cannot run it, on any GPU: its import reach stands in for the records."""
    planned = plan(replace(found, importers=("tests/test_gpu.py", "tests/engine"), importers_read=True), gpu_types)
    assert (planned.full, planned.paths["A10"], planned.reasons[0]) == (
        {},
        [NarrowPath("tests/test_gpu.py"), NarrowPath("tests/engine")],
        f"{POOL}:Pool.allocate: touched rule: {why}: runs the 2 test path(s) that can load it",
    )


FULL = {
    **{
        name: (replace(found, importers_unknown=EVERY_TEST, importers_read=True), gpu_types, f"{why}, and {EVERY_TEST}")
        for name, (found, gpu_types, why) in NO_RECORD_TELLS.items()
    },
    "outside-tests": (
        RecordedFile(
            POOL,
            ALLOCATE,
            {**RECORDS, "A10": GpuRecord({"Pool.allocate": frozenset({"<outside tests>"})}, (C1,))},
            importers_unknown=EVERY_TEST,
            importers_read=True,
        ),
        EVERYWHERE,
        f"it ran outside the tests (at import), and every test may read what it made, and {EVERY_TEST}",
    ),
}


@pytest.mark.parametrize(("found", "gpu_types", "why"), list(FULL.values()), ids=list(FULL))
def test_a_gpu_type_runs_its_full_set_where_neither_records_nor_the_import_reach_can_tell(
    found: RecordedFile, gpu_types: dict[str, GpuRecords], why: str
) -> None:
    planned = plan(found, gpu_types)
    assert (list(planned.full), planned.reasons[0], list(planned.paths)) == (
        ["A10"],
        f"{POOL}:Pool.allocate: touched rule: A10 stages run their full set ({why})",
        ["CPU"],
    )


UNRECORDED = {
    "module-level": (
        UnitChange(("<module>", "Pool.free")),
        f"it edits module-level code, which runs at import, outside the tests, and {EVERY_TEST}",
    ),
    "new-unit": (UnitChange(("Pool.grow",), ("Pool.grow",)), "it adds Pool.grow: no record knows it"),
    "unparsed": (
        UnitChange(undecided="it does not parse as Python at the head"),
        "it does not parse as Python at the head",
    ),
}


@pytest.mark.parametrize(("change", "why"), list(UNRECORDED.values()), ids=list(UNRECORDED))
def test_a_change_no_record_can_narrow_cannot_decide(change: UnitChange, why: str) -> None:
    planned = plan(RecordedFile(POOL, change, RECORDS, importers_unknown=EVERY_TEST))
    assert (planned.undecided, planned.reasons, planned.paths) == (
        [why],
        [f"{POOL}: touched rule: cannot narrow ({why})"],
        {},
    )


def test_a_file_no_test_of_a_gpu_type_ran_runs_the_test_paths_that_can_load_it_there() -> None:
    """A10's records never ran the file, yet a test may run it in a process coverage did not measure."""
    found = RecordedFile(POOL, ALLOCATE, {"CPU": RECORDS["CPU"]}, importers=("tests/engine",), importers_read=True)
    planned = plan(found)
    assert (planned.full, planned.paths["A10"], planned.reasons[0]) == (
        {},
        [NarrowPath("tests/engine")],
        f"{POOL}:Pool.allocate: touched rule: no test ran it on A10 records: runs the 1 test path(s) that can load it",
    )


def test_stale_tests_and_test_files_changed_since_the_records_run_too() -> None:
    records = {"CPU": GpuRecords((C1,), ("tests/test_old.py",), ("src/other.py", "tests/test_new.py"))}
    evidence = TouchEvidence({POOL: RecordedFile(POOL, UnitChange(("Pool.free",)), RECORDS)}, records)
    planned = plan_touched(
        evidence, [POOL], ["CPU"], test_path=lambda path: NarrowPath(path) if path.startswith("tests/") else None
    )
    assert (planned.paths, planned.reasons[1]) == (
        {
            "CPU": [
                NarrowPath("tests/test_pool.py::test_c"),
                NarrowPath("tests/test_old.py"),
                NarrowPath("tests/test_new.py"),
            ]
        },
        "touched rule: CPU stages also run 2 test path(s) their records do not know as they are now (stale, or "
        "changed since 111111111111)",
    )


def test_tests_run_unmeasured_and_test_files_no_record_ran_run_too() -> None:
    """A timed test's record says nothing of what it runs; a test file no record of the GPU type ran (a stage
    that never recorded there) may run anything."""
    unmeasured = ("tests/test_perf.py::test_case[gpu-a]", "tests/test_perf.py::test_case[gpu-b]")
    records = {"CPU": GpuRecords((C1,), unmeasured=unmeasured, unrecorded_test_files=("tests/test_never.py",))}
    evidence = TouchEvidence({POOL: RecordedFile(POOL, UnitChange(("Pool.free",)), RECORDS)}, records)
    planned = plan_touched(evidence, [POOL], ["CPU"], test_path=NarrowPath)
    assert (planned.paths, planned.reasons[1:]) == (
        {
            "CPU": [
                NarrowPath("tests/test_pool.py::test_c"),
                NarrowPath("tests/test_perf.py::test_case"),
                NarrowPath("tests/test_never.py"),
            ]
        },
        [
            "touched rule: CPU stages also run 1 test path(s) their records ran unmeasured (timed: coverage would "
            "slow what they measure)",
            "touched rule: CPU stages also run 1 test path(s) no CPU record ran (never recorded there)",
        ],
    )


def test_of_the_tests_no_record_speaks_for_only_those_that_can_load_the_change_run() -> None:
    """A stale test, a timed one and a test file never recorded may run anything they can load; a test path
    that cannot import the changed file cannot reach it, so it stays out, and the line counts it."""
    unmeasured = ("tests/perf/test_perf.py::test_case[gpu-a]", "tests/test_timed.py::test_t")
    records = {"CPU": GpuRecords(
        (C1,), ("tests/test_old.py", "tests/engine/test_stale.py"), unmeasured=unmeasured,
        unrecorded_test_files=("tests/test_never.py", "tests/engine/test_never.py"),
    )}  # fmt: skip
    found = RecordedFile(POOL, UnitChange(("Pool.free",)), RECORDS, importers=("tests/engine", "tests/perf"),
                         importers_read=True)  # fmt: skip
    planned = plan_touched(TouchEvidence({POOL: found}, records), [POOL], ["CPU"], test_path=NarrowPath)
    assert (planned.paths, planned.reasons[1:]) == (
        {
            "CPU": [
                NarrowPath("tests/test_pool.py::test_c"),
                NarrowPath("tests/engine/test_stale.py"),
                NarrowPath("tests/perf/test_perf.py::test_case"),
                NarrowPath("tests/engine/test_never.py"),
            ]
        },
        [
            "touched rule: CPU stages also run 1 test path(s) their records do not know as they are now (stale, or "
            "changed since 111111111111); 1 more cannot load the change",
            "touched rule: CPU stages also run 1 test path(s) their records ran unmeasured (timed: coverage would "
            "slow what they measure); 1 more cannot load the change",
            "touched rule: CPU stages also run 1 test path(s) no CPU record ran (never recorded there); 1 more "
            "cannot load the change",
        ],
    )


def test_a_module_level_change_runs_every_test_that_ran_the_file_and_the_test_paths_that_import_it() -> None:
    """What module-level code made at import, any function of the file and any importer may read; what ran
    it while pytest collected is <outside tests>, which the importers stand for here."""
    records = {gpu: GpuRecord({**record.units, "<module>": frozenset({"<outside tests>"})}, record.commits)
               for gpu, record in RECORDS.items()}  # fmt: skip
    importers = ("tests/test_pool.py", "tests/engine")
    planned = plan(RecordedFile(POOL, UnitChange(("<module>",)), records, importers=importers, importers_read=True))
    assert (planned.undecided, planned.full, planned.paths["CPU"]) == ([], {}, [
        NarrowPath("tests/test_pool.py"), NarrowPath("tests/engine"), NarrowPath("tests/test_pool.py::test_a"),
        NarrowPath("tests/test_pool.py::test_b"), NarrowPath("tests/test_pool.py::test_c"),
    ])  # fmt: skip
    assert planned.reasons[1] == (
        f"{POOL}:<module>: touched rule: runs the 3 test(s) that ran a unit of it (it changes code that runs at "
        "import) on CPU records from 111111111111 and the 2 test path(s) that can load it"
    )


def test_a_def_the_change_adds_narrows_like_module_level_code_when_the_importers_are_known() -> None:
    """A new method's header binds it at import: what can call it is the file's own code (the tests that ran a
    unit of it) or an importer's (the test paths that import it)."""
    grow = UnitChange(("<module>", "Pool.grow"), ("Pool.grow",))
    found = RecordedFile(POOL, grow, {"CPU": RECORDS["CPU"]}, importers=("tests/test_pool.py",), importers_read=True)
    planned = plan(found, {"CPU": EVERYWHERE["CPU"]})
    assert (planned.undecided, planned.paths["CPU"][:2], planned.reasons[-1]) == ([], [
        NarrowPath("tests/test_pool.py"), NarrowPath("tests/test_pool.py::test_a"),
    ], f"{POOL}:<module>, Pool.grow: touched rule: runs the 3 test(s) that ran a unit of it (it changes code that "
       "runs at import; it adds Pool.grow, which no record knows) on CPU records from 111111111111 and the 1 test "
       "path(s) that can load it")  # fmt: skip
    unknown = plan(replace(found, importers=(), importers_unknown=EVERY_TEST))
    assert unknown.undecided == [f"it adds Pool.grow, whose def runs at import, outside the tests, and {EVERY_TEST}"]


def test_a_function_that_ran_at_import_narrows_to_its_tests_and_the_test_paths_that_import_its_file() -> None:
    """Some importer's import-time code called Pool.allocate on A10 (<outside tests>): the importers stand for
    it, so A10 narrows where it would otherwise run its full set (FULL["outside-tests"])."""
    ran = frozenset({"<outside tests>", "tests/test_gpu.py::test_g"})
    records = {**RECORDS, "A10": GpuRecord({"Pool.allocate": ran}, (C1,))}
    found = RecordedFile(POOL, ALLOCATE, records, importers=("tests/test_gpu.py",), importers_read=True)
    assert found.runs_at_import() and not found.at_import
    planned = plan(found)
    assert (planned.full, planned.paths["A10"]) == (
        {}, [NarrowPath("tests/test_gpu.py"), NarrowPath("tests/test_gpu.py::test_g")],
    )  # fmt: skip


def test_a_new_file_only_changed_files_load_adds_no_test_of_its_own() -> None:
    """What runs a new file is what loads it: files the change edits, whose own lines select their tests."""
    norm = AddedFile("src/norm.py", ("src/pool.py",))
    evidence = TouchEvidence({POOL: RecordedFile(POOL, ALLOCATE, RECORDS)}, EVERYWHERE, added={norm.path: norm})
    planned = plan_touched(evidence, [POOL, norm.path], ["A10", "CPU"], test_path=lambda path: None)
    assert (planned.undecided, planned.paths, planned.reasons[0]) == (
        [],
        plan(RecordedFile(POOL, ALLOCATE, RECORDS)).paths,
        "src/norm.py: touched rule: a new file that only files this change edits load (src/pool.py): their records "
        "select what reaches it",
    )
    unused = AddedFile("src/unused.py")
    alone = plan_touched(TouchEvidence({}, EVERYWHERE, added={unused.path: unused}), [unused.path], ["CPU"],
                         test_path=lambda path: None)  # fmt: skip
    assert (alone.paths, alone.reasons) == (
        {},
        ["src/unused.py: touched rule: a new file that no file loads: nothing runs it"],
    )


def test_a_new_file_that_an_unchanged_file_loads_cannot_be_decided() -> None:
    norm = AddedFile("src/norm.py", ("src/pool.py", "src/b.py"), ("src/b.py",))
    planned = plan_touched(TouchEvidence({}, EVERYWHERE, added={norm.path: norm}), [norm.path], ["CPU"],
                           test_path=lambda path: None)  # fmt: skip
    assert planned.undecided == ["it is new, and src/b.py, which the change leaves as it is, load(s) it"]
