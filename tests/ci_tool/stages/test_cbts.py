"""Change-based selection (step 16) on a small catalog: one table per rule, the fallback to the full set,
what turns it off, the narrowed lines and shard counts, and engines that run whole shards."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from ci_tool.bot.grammar import parse_comment
from ci_tool.change.touch_records import GpuRecord, GpuRecords, RecordedFile, TouchEvidence
from ci_tool.change.units import UnitChange
from ci_tool.change.value import ChangeSet
from ci_tool.stages.catalog_load import open_catalog
from ci_tool.stages.cbts import CbtsScope, narrowed_shards
from ci_tool.stages.engines import Engine
from ci_tool.stages.select import Selection, select_for_change

FOLDER = Path(__file__).parent / "catalogs" / "cbts"
LOADED = open_catalog(FOLDER / "stages.yml", FOLDER / "test-db")
WAIVES = "test-db/waives.txt"
WAIVED = (FOLDER / "test-db" / "waives.txt").read_text()
GPU_DB = (FOLDER / "test-db" / "l0_gpu.yml").read_text()
FULL = ("CPU-Generic-1", "CPU-Generic-2", "CPU-Generic-3", "A10-PyTorch-1", "A10-PyTorch-2", "DGX_H100-PyTorch-1",
        "CPU-Build_Docs")  # fmt: skip


def select(
    files: tuple[str, ...],
    comment: str = "/bot run",
    *,
    base: Mapping[str, str | None] | None = None,
    now: Mapping[str, str | None] | None = None,
    deleted: frozenset[str] = frozenset(),
    engine: Engine = Engine.LOCAL,
) -> Selection:
    request = parse_comment(comment).selection_request()
    changes = ChangeSet(files, base=base, now=now or {}, deleted=deleted)
    return select_for_change(LOADED, request, engine=engine, changes=changes)


def lines(selection: Selection) -> dict[str, list[str]]:
    """Each selected stage's lines as written."""
    plans = LOADED.planner.selection(selection.selected)
    return {name: [line.raw for line in plan.lines] for name, plan in plans.items()}


def scope(selection: Selection) -> CbtsScope:
    assert selection.narrowing is not None
    return selection.narrowing.scope


# files, base, now -> (scope, stages, reasons)
NOTHING_TO_TEST = {
    "durations": (("test-db/.test_durations",), ("test-db/.test_durations: out of scope: nothing to test",)),
    "benchmark": (("bench/x_bench.py",), ("bench/x_bench.py: out of scope: nothing to test",)),
}


@pytest.mark.parametrize(("files", "reasons"), NOTHING_TO_TEST.values(), ids=NOTHING_TO_TEST.keys())
def test_an_out_of_scope_change_runs_nothing(files: tuple[str, ...], reasons: tuple[str, ...]) -> None:
    selection = select(files)
    assert (scope(selection), selection.names) == (CbtsScope.NOOP, ())
    assert selection.narrowing is not None
    assert selection.narrowing.reasons == (*reasons, "change-based selection: noop (nothing to test)")
    assert {v.reason for v in selection.excluded if v.step == 16} == {
        "change-based selection: the change touches none of its tests",
        "change-based selection: no docs change",
    }


def test_a_docs_change_runs_the_docs_stage_only() -> None:
    selection = select(("docs/guide.md", "README.md"))
    assert (scope(selection), selection.names) == (CbtsScope.NARROWED, ("CPU-Build_Docs",))
    assert selection.narrowing is not None and selection.narrowing.reasons == (
        "docs/guide.md, README.md: docs rule: the docs stage checks them",
        "change-based selection: the docs stage only",
    )


FALLBACKS = {
    "a source file": (("src/engine/pool.py",), None, "src/engine/pool.py: no rule claims it"),
    "a source file among docs": (("docs/a.md", "src/x.py"), None, "src/x.py: no rule claims it"),
    "a test helper no entry covers": (("tests/fixtures/data.txt",), None, "tests/fixtures/data.txt: no rule claims it"),
    # an entry covers these, yet their own path runs none of the tests that read them (in other files)
    "a helper an entry covers": (("tests/engine/helpers.py",), None, "tests/engine/helpers.py: no rule claims it"),
    "a data file an entry covers": (("tests/unit/golden.txt",), None, "tests/unit/golden.txt: no rule claims it"),
    "waives without a base": (
        (WAIVES,),
        None,
        "test-db/waives.txt: waives rule: cannot decide (no base revision to compare it with; pass --base REF)",
    ),
    "a test-db file that does not parse at the base": (
        ("test-db/l0_gpu.yml",),
        {"test-db/l0_gpu.yml": "l0_gpu: ["},
        "test-db/l0_gpu.yml: test-db rule: cannot decide (test-db/l0_gpu.yml at the base:1:10: expected valid YAML",
    ),
}


@pytest.mark.parametrize(("files", "base", "reason"), FALLBACKS.values(), ids=FALLBACKS.keys())
def test_a_change_no_rule_can_decide_runs_the_full_set(
    files: tuple[str, ...], base: dict[str, str] | None, reason: str
) -> None:
    selection = select(files, base=base, now={"test-db/l0_gpu.yml": GPU_DB})
    assert (scope(selection), selection.names) == (CbtsScope.FULL, FULL)
    assert selection.narrowing is not None
    assert any(found.startswith(reason) for found in selection.narrowing.reasons)
    assert selection.narrowing.reasons[-1] == "change-based selection: the full set runs"


OFF = {
    "stage list": ('/bot run --stage-list "A10-PyTorch-1"', "--stage-list chose the stages", ("A10-PyTorch-1",)),
    "gpu type": ('/bot run --gpu-type "A10"', "--gpu-type chose the stages", ("A10-PyTorch-1", "A10-PyTorch-2")),
    "disable cbts": ("/bot run --disable-cbts", "--disable-cbts asks for the full set", FULL),
}


@pytest.mark.parametrize(("comment", "why", "names"), OFF.values(), ids=OFF.keys())
def test_selection_flags_and_disable_cbts_turn_it_off(comment: str, why: str, names: tuple[str, ...]) -> None:
    selection = select(("test-db/.test_durations",), comment)
    assert (scope(selection), selection.names) == (CbtsScope.OFF, names)
    assert selection.narrowing is not None
    assert selection.narrowing.reasons == (f"change-based selection off: {why}",)


def test_run_options_leave_it_on() -> None:
    selection = select(("test-db/.test_durations",), "/bot run --disable-fail-fast --reuse-test --detailed-log")
    assert scope(selection) is CbtsScope.NOOP


# (files, base, now) -> each selected stage's lines
NARROWED = {
    "a removed waive runs that test wherever it is listed": (
        (WAIVES,),
        {WAIVES: WAIVED + "tests/engine/test_attention.py::test_x SKIP (https://bugs.example/2)\n"},
        {WAIVES: WAIVED},
        {
            "CPU-Generic-1-cbts": ['tests/engine/test_attention.py::test_x -m "not gpu"'],
            "A10-PyTorch-1-cbts": ["tests/engine/test_attention.py::test_x"],
            "DGX_H100-PyTorch-1-cbts": ["tests/engine/test_attention.py::test_x"],
        },
    ),
    "a removed GPU-scoped waive runs on that GPU only": (
        (WAIVES,),
        {WAIVES: WAIVED + "full:A10/tests/gpu_only/test_z.py SKIP (https://bugs.example/3)\n"},
        {WAIVES: WAIVED},
        {"A10-PyTorch-1-cbts": ["tests/gpu_only/test_z.py"]},
    ),
    "an added test-db entry runs alone": (
        ("test-db/l0_gpu.yml",),
        {"test-db/l0_gpu.yml": GPU_DB.replace("  - tests/gpu_only\n", "")},
        {"test-db/l0_gpu.yml": GPU_DB},
        {"A10-PyTorch-1-cbts": ["tests/gpu_only"], "DGX_H100-PyTorch-1-cbts": ["tests/gpu_only"]},
    ),
    "a changed marker runs the entry": (
        ("test-db/l0_cpu.yml",),
        {"test-db/l0_cpu.yml": (FOLDER / "test-db" / "l0_cpu.yml").read_text().replace(" TIMEOUT (20)", "")},
        {"test-db/l0_cpu.yml": (FOLDER / "test-db" / "l0_cpu.yml").read_text()},
        {"CPU-Generic-1-cbts": ["tests/unit TIMEOUT (20)"]},
    ),
    "a test file under a listed folder runs alone, markers kept": (
        ("tests/unit/test_a.py",),
        None,
        None,
        {"CPU-Generic-1-cbts": ["tests/unit/test_a.py TIMEOUT (20)"]},
    ),
    "a test file under a filtered folder keeps the filter": (
        ("tests/engine/test_attention.py",),
        None,
        None,
        {
            "CPU-Generic-1-cbts": ['tests/engine/test_attention.py -m "not gpu"'],
            "A10-PyTorch-1-cbts": ["tests/engine/test_attention.py"],
            "DGX_H100-PyTorch-1-cbts": ["tests/engine/test_attention.py"],
        },
    ),
    "a test file whose node is listed runs that node": (
        ("tests/engine/test_pool.py",),
        None,
        None,
        {
            "CPU-Generic-1-cbts": ['tests/engine/test_pool.py -m "not gpu"'],
            "A10-PyTorch-1-cbts": ["tests/engine/test_pool.py::test_alloc"],
            "DGX_H100-PyTorch-1-cbts": ["tests/engine/test_pool.py::test_alloc"],
        },
    ),
    "a conftest runs its folder": (
        ("tests/engine/conftest.py",),
        None,
        None,
        {
            "CPU-Generic-1-cbts": ['tests/engine -m "not gpu"'],
            "A10-PyTorch-1-cbts": ["tests/engine/test_attention.py", "tests/engine/test_pool.py::test_alloc"],
            "DGX_H100-PyTorch-1-cbts": ["tests/engine/test_attention.py", "tests/engine/test_pool.py::test_alloc"],
        },
    ),
    "tests and docs together": (
        ("tests/tools/test_cli.py", "docs/cli.md"),
        None,
        None,
        {"CPU-Generic-1-cbts": ["tests/tools/test_cli.py"], "CPU-Build_Docs": []},
    ),
}


@pytest.mark.parametrize(("files", "base", "now", "expected"), NARROWED.values(), ids=NARROWED.keys())
def test_a_narrowed_stage_runs_what_the_change_affects(
    files: tuple[str, ...],
    base: dict[str, str] | None,
    now: dict[str, str] | None,
    expected: dict[str, list[str]],
) -> None:
    selection = select(files, base=base or {}, now=now)
    assert (scope(selection), lines(selection)) == (CbtsScope.NARROWED, expected)


def test_a_removed_waive_is_run_and_an_added_one_is_not() -> None:
    added = select((WAIVES,), base={WAIVES: WAIVED}, now={WAIVES: WAIVED + "tests/unit/test_a.py SKIP (x)\n"})
    assert (scope(added), added.names) == (CbtsScope.NOOP, ())
    assert added.narrowing is not None
    assert added.narrowing.reasons[0] == "test-db/waives.txt: waives rule: the change removes no waive: nothing to run"


def test_a_deleted_test_file_runs_only_the_entries_that_name_it() -> None:
    gone = frozenset({"tests/unit/test_gone.py", "tests/slow/test_big.py"})
    selection = select(tuple(sorted(gone)), deleted=gone)
    assert lines(selection) == {"CPU-Generic-1-cbts": ["tests/slow/test_big.py ISOLATION"]}


def test_a_narrowed_family_runs_as_many_shards_as_its_budget_needs() -> None:
    selection = select(("tests/slow/test_big.py", "tests/unit/test_a.py"))  # 9010 s: two shards of 2 h
    assert lines(selection) == {
        "CPU-Generic-1-cbts": ["tests/slow/test_big.py ISOLATION"],
        "CPU-Generic-2-cbts": ["tests/unit/test_a.py TIMEOUT (20)"],
    }
    verdicts = {v.stage: (v.selected, v.reason) for v in selection.verdicts}
    assert verdicts["CPU-Generic-3"] == (
        False,
        "change-based selection: runs as CPU-Generic-1-cbts, CPU-Generic-2-cbts",
    )


@pytest.mark.parametrize(
    ("seconds", "tests", "shards"), [(0.0, 9, 1), (7200.0, 9, 1), (7201.0, 9, 2), (1e6, 9, 3), (1e6, 2, 2)]
)
def test_k_is_the_predicted_time_over_the_budget_clamped_to_the_splits_and_tests(
    seconds: float, tests: int, shards: int
) -> None:
    assert narrowed_shards(LOADED.catalog.families[0], seconds, tests) == shards


def test_post_merge_is_narrowed_too() -> None:
    selection = select(("tests/perf/test_perf.py",), "/bot run --post-merge")
    assert lines(selection) == {"A10-PyTorch-Post-Merge-1-cbts": ["tests/perf/test_perf.py"]}


@pytest.mark.parametrize("engine", list(Engine), ids=[engine.value for engine in Engine])
def test_every_engine_runs_the_narrowed_stages(engine: Engine) -> None:
    """The generated pipelines run `-cbts` stages as a local run does (their stage jobs read the narrowing from
    the plan's run record), so every engine's selection is the local one."""
    selection = select(("tests/tools/test_cli.py",), engine=engine)
    assert selection.names == ("CPU-Generic-1-cbts",)
    assert lines(selection) == lines(select(("tests/tools/test_cli.py",), engine=Engine.LOCAL))


def test_without_changed_files_nothing_narrows() -> None:
    request = parse_comment("/bot run").selection_request()
    selection = select_for_change(LOADED, request, engine=Engine.LOCAL, changes=None)
    assert (scope(selection), selection.names) == (CbtsScope.OFF, FULL)


def test_the_selection_json_says_what_cbts_did() -> None:
    cbts = select(("tests/tools/test_cli.py",)).to_json()["cbts"]
    assert cbts == {
        "scope": "narrowed",
        "reasons": [
            "tests/tools/test_cli.py: tests rule: runs the list entries that cover it",
            "change-based selection: narrowed to 1 family",
        ],
        "families": {
            "CPU-Generic": {
                "lines": 1,
                "predicted_seconds": 5.0,
                "shards": 1,
                # what its -cbts stage jobs run (stages/record.py reads it back)
                "filter": {"paths": [{"path": "tests/tools/test_cli.py", "gpu": None}], "entries": []},
            }
        },
        "docs": False,
    }


def test_a_gpu_types_unrecorded_test_files_count_only_where_its_lists_hold_them() -> None:
    """No A10 record ran tests/engine/test_attention.py (an A10 line) or tests/ci/test_cli.py (no A10 line):
    only the first runs there, and the plan counts only it."""
    allocate = UnitChange(("Pool.allocate",))
    records = {"A10": GpuRecord({"Pool.allocate": frozenset({"tests/engine/test_pool.py::test_alloc"})}, ("1" * 40,))}
    unrecorded = ("tests/ci/test_cli.py", "tests/engine/test_attention.py")
    evidence = TouchEvidence(
        {"src/pool.py": RecordedFile("src/pool.py", allocate, records)},
        {"A10": GpuRecords(("1" * 40,), unrecorded_test_files=unrecorded)},
    )
    request = parse_comment("/bot run").selection_request()
    selection = select_for_change(
        LOADED, request, engine=Engine.LOCAL, changes=ChangeSet(("src/pool.py",), touches=evidence)
    )
    assert selection.narrowing is not None
    assert "touched rule: A10 stages also run 1 test path(s) no A10 record ran (never recorded there)" in (
        selection.narrowing.reasons
    )
    assert lines(selection)["A10-PyTorch-1-cbts"] == [
        "tests/engine/test_attention.py",
        "tests/engine/test_pool.py::test_alloc",
    ]


def test_a_test_that_reads_a_changed_file_as_text_runs_whatever_else_narrows(tmp_path: Path) -> None:
    """change_rules.readers: a check of the code itself (its layers, its style) reads files as text, so no
    touch record or import shows it reaching them; a change to one runs it, here beside the docs stage."""
    folder = tmp_path / "catalog"
    folder.mkdir()
    text = (FOLDER / "stages.yml").read_text().replace(
        "  out_of_scope:", "  readers:\n    tests/tools/test_cli.py: ['*.md']\n  out_of_scope:"
    )
    (folder / "stages.yml").write_text(text)
    loaded = open_catalog(folder / "stages.yml", FOLDER / "test-db")
    request = parse_comment("/bot run").selection_request()
    selection = select_for_change(loaded, request, engine=Engine.LOCAL, changes=ChangeSet(("README.md",)))
    assert selection.names == ("CPU-Generic-1-cbts", "CPU-Build_Docs")
    assert selection.narrowing is not None and selection.narrowing.reasons == (
        "README.md: docs rule: the docs stage checks it",
        "tests/tools/test_cli.py: readers rule: it reads README.md as text",
        "change-based selection: narrowed to 1 family and the docs stage",
    )
