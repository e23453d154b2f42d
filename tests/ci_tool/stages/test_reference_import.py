"""`ci-tool stages import`: TensorRT-LLM's stage table (both of its forms) becomes a catalog that loads against
the reference's real test-db and durations in one pass, or fails once listing every problem.

The tables are in tests/ci_tool/stages/reference/ (see its README: the family JSON of one reference commit,
and the same families written as the older shard rows)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.errors import StageError
from ci_tool.stages.catalog_load import read_catalog
from ci_tool.stages.durations import load_durations
from ci_tool.stages.planner import Planner
from ci_tool.stages.reference_import import ImportedCatalog, import_stage_table
from ci_tool.testdb.load import load_test_db
from tests.ci_tool.testdb.corpus import CORPUS, TEST_DB, needs_corpus

REFERENCE = Path(__file__).parent / "reference"
CONFIGS = REFERENCE / "test_stage_configs.json"
ROWS = REFERENCE / "stage_rows.groovy"
FAMILIES, STAGES = 94, 182  # the reference commit's test families and their shards


def imported(path: Path) -> ImportedCatalog:
    return import_stage_table(path.read_text(encoding="utf-8"), source=path.name)


def facts(catalog: ImportedCatalog) -> dict[str, tuple[object, ...]]:
    return {f.name: (f.platform, f.context, f.splits, f.arch, f.slurm) for f in catalog.families}


def test_both_forms_import_the_same_families() -> None:
    from_configs, from_rows = imported(CONFIGS), imported(ROWS)
    assert len(from_configs.families) == FAMILIES
    assert sum(f.splits for f in from_configs.families) == STAGES
    assert facts(from_rows) == facts(from_configs)


def test_what_has_no_catalog_field_is_said_per_family() -> None:
    notes = imported(CONFIGS).notes
    assert (
        "DGX_B200-PyTorch: runWithSbatch true: not carried over (ci-tool's Slurm executor always submits sbatch jobs)"
        in notes
    )
    assert any(note.startswith("DGX_H100-2_GPUs-PyTorch-ModelExpress: modelExpressSidecar true") for note in notes)
    assert any(note.startswith("GB200-8_GPUs-2_Nodes-PyTorch: target \"multiNodesSBSA\"") for note in notes)


def test_the_yaml_keeps_notes_as_comments_and_slurm_implied_by_auto() -> None:
    text = imported(CONFIGS).yaml()
    assert text.startswith(
        "# Imported from test_stage_configs.json by `ci-tool stages import`: 94 families, 182 stages."
    )
    block = text.split("  - name: DGX_B200-PyTorch\n", 1)[1].split("  - name:", 1)[0]
    assert block.startswith('    platform: "auto:dgx-b200-flex"\n    context: l0_b200\n    splits: 9\n')
    assert "executor:" not in block  # auto: means Slurm
    gb10 = text.split("  - name: GB10-PyTorch-Post-Merge\n", 1)[1].split("  - name:", 1)[0]
    assert "    arch: aarch64\n    executor: slurm\n" in gb10  # Slurm on a plain partition label


@needs_corpus(TEST_DB)
def test_an_imported_table_fails_once_listing_every_missing_context() -> None:
    db = load_test_db(TEST_DB)
    catalog = imported(CONFIGS)
    missing = [f for f in catalog.families if f.context not in db.contexts]
    with pytest.raises(StageError) as raised:
        read_catalog(catalog.yaml(), Planner(db, load_durations(CORPUS / "test_durations.json")), file="stages.yml")
    problems = raised.value.problems
    assert str(raised.value).startswith(f"stages.yml: {len(missing)} problems, each on a line below\n")
    assert len(problems) == len(missing) > 40
    assert {p.message.split("found no context ")[1] for p in problems} == {repr(f.context) for f in missing}
    assert all(p.where is not None and p.where.line and p.where.yaml_path for p in problems)


@needs_corpus(TEST_DB)
def test_the_families_the_corpus_holds_load_with_bounded_timeouts() -> None:
    db = load_test_db(TEST_DB)
    catalog = imported(CONFIGS)
    present = ImportedCatalog(tuple(f for f in catalog.families if f.context in db.contexts), catalog.source)
    durations = load_durations(CORPUS / "test_durations.json")
    loaded = read_catalog(present.yaml(), Planner(db, durations), file="stages.yml")
    assert len(loaded.families) == len(present.families) > 40
    assert max(family.timeout_minutes for family in loaded.families) <= 240


@needs_corpus(TEST_DB)
def test_generate_renders_an_imported_catalog(tmp_path: Path) -> None:
    db = load_test_db(TEST_DB)
    catalog = imported(CONFIGS)
    present = ImportedCatalog(tuple(f for f in catalog.families if f.context in db.contexts), catalog.source)
    (tmp_path / "stages.yml").write_text(present.yaml(), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "tensorrt-llm"\n', encoding="utf-8")
    durations = tmp_path / "durations.json"
    durations.write_text((CORPUS / "test_durations.json").read_text(encoding="utf-8"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ci_tool", "generate", "--catalog", "stages.yml", "--test-db", str(TEST_DB),
         "--durations", str(durations)],
        cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    groovy = (tmp_path / "jenkins" / "L0_Test.groovy").read_text(encoding="utf-8")
    assert "DGX_H100-PyTorch-6" in groovy or "DGX_H100-PyTorch" in groovy


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '{"configs": [{"name": "A10-PyTorch", "platform": "a10", "testDB": 3, "splits": 0}]}',
            "t.json: 2 problems, each on a line below\n"
            "  t.json (configs[0].testDB): expected a test-db context, found 3\n"
            "  t.json (configs[0].splits): expected a shard count >= 1, found 0",
            id="configs-kinds",
        ),
        pytest.param(
            '{"stages": []}',
            't.json: expected a JSON object with a "configs" list, found dict Hint: the family form is '
            '{"configs": [{"name": ..., "platform": ..., "testDB": ..., "splits": N}]}',
            id="configs-missing",
        ),
        pytest.param(
            'def x86TestConfigs = [\n    "A10-PyTorch": ["a10", "l0_a10", 1, 3],\n]\n',
            't.json:2:6: expected "Name-K": [platform, context, K, N, ...], found \'"A10-PyTorch": ["a10", '
            "\"l0_a10\", 1, 3],' Hint: platform and context are strings; K and N whole numbers, N >= K >= 1",
            id="row-without-shard",
        ),
        pytest.param(
            "nothing here\n",
            't.json: expected stage rows such as "A10-PyTorch-1": ["a10", "l0_a10", 1, 3], found none '
            'Hint: or the family JSON form {"configs": [...]}',
            id="no-rows",
        ),
    ],
)
def test_a_bad_table_is_refused_with_each_problem_located(text: str, message: str) -> None:
    with pytest.raises(StageError) as raised:
        import_stage_table(text, source="t.json")
    assert str(raised.value) == message


def test_rows_of_one_family_that_disagree_are_notes() -> None:
    text = (
        'def x86TestConfigs = [\n    "A10-PyTorch-1": ["a10", "l0_a10", 1, 2],\n'
        '    "A10-PyTorch-3": ["a30", "l0_a10", 3, 3],\n]\n'
    )
    (family,) = import_stage_table(text, source="rows.groovy").families
    assert family.notes == [
        "line 3: platform 'a30' differs from line 2's 'a10'; kept 'a10'",
        "line 3: shard count 3 differs from line 2's 2; kept 2",
        "rows for shards [1, 3] of 2: the family keeps 2 shards",
    ]


def test_the_command_writes_a_new_file_and_never_overwrites(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "ci_tool", "stages", "import", str(CONFIGS), "--output", "stages.yml"]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines()[-1] == "imported 94 families (182 stages), 51 note(s)"
    assert (tmp_path / "stages.yml").read_text(encoding="utf-8") == imported(CONFIGS).yaml().replace(
        "test_stage_configs.json", str(CONFIGS), 1
    )
    second = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert second.returncode == 1
    assert "expected a new file for the catalog, found 'stages.yml' already there" in second.stderr


@needs_corpus(TEST_DB)
def test_platform_facts_render_what_the_reference_runners_report(tmp_path: Path) -> None:
    """The reference's single-GPU B200 families render l0_b200, whose blocks ask for `*b100*` (what that pool's
    GPUs report): empty from the stage name's facts (DGX_B200), their lists once the catalog says so (the
    CPP family stays empty: l0_b200 has no `backend: cpp` block)."""
    db = load_test_db(TEST_DB)
    b200 = tuple(f for f in imported(CONFIGS).families if f.context == "l0_b200")
    assert [f.name for f in b200] == ["DGX_B200-CPP", "DGX_B200-PyTorch", "DGX_B200-PyTorch-Post-Merge"]
    text = ImportedCatalog(b200, "configs").yaml()
    durations = load_durations(CORPUS / "test_durations.json")

    def rendered(catalog_text: str) -> dict[str, int]:
        catalog = read_catalog(catalog_text, Planner(db, durations), file="stages.yml")
        plans = Planner(db, durations).selection(catalog.stages, allow_empty=True)
        return {name: len(plan.lines) for name, plan in plans.items()}

    assert set(rendered(text).values()) == {0}
    with_facts = text.replace("families:\n", "platforms:\n  dgx-b200-flex: {gpu: B100}\nfamilies:\n")
    counts = rendered(with_facts)
    assert counts.pop("DGX_B200-CPP-1") == 0
    assert len(counts) == 11 and all(count > 0 for count in counts.values())
    catalog_file = tmp_path / "stages.yml"
    catalog_file.write_text(with_facts, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "ci_tool", "stage", "show", "DGX_B200-PyTorch-3", "--catalog", str(catalog_file),
         "--test-db", str(TEST_DB), "--durations", str(CORPUS / "test_durations.json")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (
        "facts: the stage name's over platform 'dgx-b200-flex''s (the catalog's `platforms:`); "
        "--system-info FILE renders for a machine"
    )
    assert "gpu=B100" in done.stdout.splitlines()[3]
