"""The stage catalog: valid files become frozen values; every invalid fixture gives its pinned one-line error;
our real jenkins/stages.yml loads and covers what the project promises."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ci_tool.bot.grammar import parse_comment
from ci_tool.change.value import ChangeSet
from ci_tool.errors import StageError
from ci_tool.stages.catalog import Catalog, TimeoutRule, path_matches, stage_glob_matches
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog, read_catalog
from ci_tool.stages.catalog_schema import parse_catalog
from ci_tool.stages.durations import load_durations
from ci_tool.stages.engines import Engine
from ci_tool.stages.planner import Planner
from ci_tool.stages.select import select_for_change, select_stages
from ci_tool.stages.shard import ALGORITHMS, AutoSplits
from ci_tool.testdb.load import load_test_db

if TYPE_CHECKING:
    from tests.helpers.golden import Golden

CATALOGS = Path(__file__).parent / "catalogs"
INVALID = sorted((CATALOGS / "invalid").glob("*.yml"))
ROOT = Path(__file__).resolve().parents[3]
DB = load_test_db(CATALOGS / "test-db")
DURATIONS = load_durations(CATALOGS / "test-db" / ".test_durations")


def parse(text: str, durations: dict[str, float] | None = None) -> Catalog:
    return read_catalog(text, Planner(DB, DURATIONS if durations is None else durations), file="stages.yml")


@pytest.mark.parametrize("fixture", INVALID, ids=[f.stem for f in INVALID])
def test_invalid_catalog_reports_its_pinned_error(fixture: Path, golden: Golden) -> None:
    with pytest.raises(StageError) as caught:
        read_catalog(fixture.read_text(), Planner(DB, DURATIONS), file=fixture.name)
    golden(fixture.with_suffix(".err"), f"{caught.value}\n")


VALID = """\
version: 1
timeouts: {margin: 1.5, minimum_minutes: 10}
multi_gpu_paths: [src/dist/, 'src/*/nccl*.py']
tag_triggers:
  tests/perf/: PerfSanity
file_groups:
- {name: docs, paths: [docs/, '*.md'], stages: [CPU-*]}
families:
- name: CPU-Generic
  platform: cpu
  context: l0_x
  splits: 1
- name: A10-PyTorch
  platform: a10
  context: l0_x
  splits: auto
  budget_minutes: 10
- name: DGX_H100-4_GPUs-PyTorch-PerfSanity-Post-Merge
  platform: dgx-h100-x4
  context: l0_x
  splits: 3
  gpu_count: 4
  node_count: 1
  on_demand: false
  timeout_minutes: 90
  arch: aarch64
"""


def test_a_valid_catalog_becomes_frozen_values() -> None:
    catalog = parse(VALID)
    assert catalog.names == (
        "CPU-Generic-1",
        "A10-PyTorch-1",
        "A10-PyTorch-2",
        "DGX_H100-4_GPUs-PyTorch-PerfSanity-Post-Merge-1",
        "DGX_H100-4_GPUs-PyTorch-PerfSanity-Post-Merge-2",
        "DGX_H100-4_GPUs-PyTorch-PerfSanity-Post-Merge-3",
    )
    assert catalog.timeouts == TimeoutRule(1.5, 10)
    assert catalog.multi_gpu_paths == ("src/dist/", "src/*/nccl*.py")
    assert [(t.path, t.token) for t in catalog.tag_triggers] == [("tests/perf/", "PerfSanity")]
    assert [(g.name, g.paths, g.stages) for g in catalog.file_groups] == [("docs", ("docs/", "*.md"), ("CPU-*",))]
    with pytest.raises(AttributeError):
        catalog.families[0].platform = "x"  # type: ignore[misc]


def test_stage_json_has_the_documented_keys_in_order() -> None:
    stage = parse(VALID).stage("DGX_H100-4_GPUs-PyTorch-PerfSanity-Post-Merge-2")
    assert stage.to_json() == {
        "name": "DGX_H100-4_GPUs-PyTorch-PerfSanity-Post-Merge-2",
        "family": "DGX_H100-4_GPUs-PyTorch-PerfSanity-Post-Merge",
        "platform": "dgx-h100-x4",
        "context": "l0_x",
        "shard": 2,
        "splits": 3,
        "gpu": "DGX_H100",
        "gpu_count": 4,
        "node_count": 1,
        "backend": "pytorch",
        "mode": "perf_sanity",
        "post_merge": True,
        "multi_gpu": True,
        "on_demand": False,
        "timeout_minutes": 90,
        "arch": "aarch64",
        "executor": "local",
    }


SLURM_FAMILY = """\
version: 1
families:
- name: GB200-8_GPUs-2_Nodes-PyTorch
  platform: auto:gb200-flex
  context: l0_x
  splits: 2
  executor: slurm
- name: CPU-Generic
  platform: cpu
  context: l0_x
  splits: 1
  executor: slurm
"""


def test_a_slurm_family_runs_its_stages_as_slurm_jobs_on_its_pool() -> None:
    catalog = parse(SLURM_FAMILY)
    assert [(s.name.name, s.platform, s.executor) for s in catalog.stages] == [
        ("GB200-8_GPUs-2_Nodes-PyTorch-1", "auto:gb200-flex", "slurm"),
        ("GB200-8_GPUs-2_Nodes-PyTorch-2", "auto:gb200-flex", "slurm"),
        ("CPU-Generic-1", "cpu", "slurm"),
    ]
    assert parse(VALID).stages[0].executor == "local"


def _reference_families() -> list[tuple[str, str, str]]:
    """reference_stages.txt's families: (name, platform, dispatch)."""
    rows = (Path(__file__).with_name("reference_stages.txt")).read_text(encoding="utf-8").splitlines()
    return [(f[0], f[2], f[5]) for f in (row.split() for row in rows) if len(f) == 6 and not f[0].startswith("#")]


REFERENCE_FAMILIES = _reference_families()


@pytest.mark.parametrize(("family", "platform", "dispatch"), REFERENCE_FAMILIES, ids=[f[0] for f in REFERENCE_FAMILIES])
def test_every_reference_family_is_a_valid_catalog_family(family: str, platform: str, dispatch: str) -> None:
    executor = "slurm" if dispatch == "slurm" else "local"
    family_yaml = f"{{name: {family}, platform: '{platform}', context: l0_x, splits: 1, executor: {executor}}}"
    text = f"version: 1\nfamilies:\n- {family_yaml}\n"
    assert [s.executor for s in parse(text).stages] == [executor]


def test_auto_splits_take_the_fewest_shards_within_the_budget() -> None:
    # a 600 s, b 300 s, c 300 s: a 10-minute budget needs a shard for a and one for b + c.
    family = parse(VALID).families[1]
    assert (family.splits, family.predicted_minutes) == (2, 10.0)


def test_reading_a_catalog_needs_no_test_db() -> None:
    """parse_catalog is pure: the file's facts as written, `auto` and derived timeouts left to resolve."""
    spec = parse_catalog(VALID, file="stages.yml")
    assert [(f.name.name, f.splits, f.budget_minutes, f.timeout_minutes) for f in spec.families] == [
        ("CPU-Generic", 1, None, None),
        ("A10-PyTorch", AutoSplits.AUTO, 10.0, None),
        ("DGX_H100-4_GPUs-PyTorch-PerfSanity-Post-Merge", 3, None, 90),
    ]
    assert spec.families[1].splits is AutoSplits.AUTO  # the member, not the YAML word
    assert str(spec.families[1].where("budget_minutes")) == "stages.yml:17:19 (families[1].budget_minutes)"


CPU_ONLY = "version: 1\nfamilies:\n- {name: CPU-Generic, platform: cpu, context: l0_x, splits: 1}\n"


@pytest.mark.parametrize(
    ("durations", "predicted_minutes", "timeout_minutes"),
    [
        ({}, 3 / 60, 30),  # nothing recorded: 1 s a test; the 30-minute floor applies
        ({"tests/a_test.py": 600.0, "tests/b_test.py": 300.0, "tests/c_test.py": 300.0}, 20.0, 40),
        ({"tests/a_test.py": 1200.0}, 60.0, 120),  # b and c count as the mean of the known (1200 s)
        ({"tests/a_test.py": 601.0, "tests/b_test.py": 300.0, "tests/c_test.py": 300.0}, 20.0 + 1 / 60, 45),
    ],
    ids=["no durations", "recorded", "mean for unknown", "rounded up to 5"],
)
def test_derived_timeout_is_the_prediction_times_the_margin(
    durations: dict[str, float], predicted_minutes: float, timeout_minutes: int
) -> None:
    family = parse(CPU_ONLY, durations).families[0]
    assert (round(family.predicted_minutes, 6), family.timeout_minutes, family.timeout_derived) == (
        round(predicted_minutes, 6),
        timeout_minutes,
        True,
    )


def test_an_explicit_timeout_wins() -> None:
    family = parse(VALID).families[2]
    assert (family.timeout_minutes, family.timeout_derived) == (90, False)


@pytest.mark.parametrize(
    ("seconds", "minutes"),
    [(0.0, 30), (60.0, 30), (15 * 60, 30), (16 * 60, 35), (3600.0, 120)],
)
def test_timeout_rule_rounds_up_to_five_minutes_with_a_floor(seconds: float, minutes: int) -> None:
    assert TimeoutRule(margin=2.0, minimum_minutes=30).minutes(seconds) == minutes


def test_a_family_whose_context_renders_nothing_loads() -> None:
    text = "version: 1\nfamilies:\n- {name: A10-PyTorch, platform: a10, context: l0_h200, splits: 2}\n"
    catalog = parse(text)  # `testdb check` reports it; loading must not hide the rest of the catalog
    assert catalog.names == ("A10-PyTorch-1", "A10-PyTorch-2")
    assert catalog.families[0].timeout_minutes == 30


def test_unknown_stage_lookup_names_the_closest() -> None:
    with pytest.raises(StageError) as caught:
        parse(VALID).stage("A10-Pytorch-1")
    assert str(caught.value) == (
        "stages.yml: expected a stage of the catalog, found no stage 'A10-Pytorch-1' "
        "Hint: did you mean 'A10-PyTorch-1' or 'A10-PyTorch-2'?"
    )


@pytest.mark.parametrize(
    ("pattern", "path", "matched"),
    [
        ("src/dist/", "src/dist/nccl.py", True),
        ("src/dist/", "src/distance.py", False),
        ("src/dist", "src/distance.py", True),  # a prefix is a prefix
        ("*.md", "docs/guide/index.md", True),  # `*` crosses `/`
        ("docs/*.md", "docs/a/b.md", True),
        ("*.md", "README.rst", False),
        ("src/*/nccl*.py", "src/kvengine/nccl_groups.py", True),
    ],
)
def test_path_rules(pattern: str, path: str, matched: bool) -> None:
    assert path_matches(pattern, path) is matched


@pytest.mark.parametrize(
    ("pattern", "name", "matched"),
    [
        ("A10-PyTorch-1", "A10-PyTorch-1", True),
        ("A10-PyTorch", "A10-PyTorch-1", False),  # no `*`: exact
        ("A10-*", "A10-PyTorch-1", True),
        ("*Post-Merge*", "DGX_B200-PyTorch-PerfSanity-Post-Merge-1", True),
        ("*PerfSanity*", "DGX_B200-PyTorch-1", False),
        ("DGX_H100*", "DGX_H100-4_GPUs-PyTorch-1", True),
        ("*-1", "A10-PyTorch-12", False),  # whole-name match
        ("A1?-*", "A10-PyTorch-1", False),  # only `*` is special
        ("*", "anything", True),
    ],
)
def test_stage_globs(pattern: str, name: str, matched: bool) -> None:
    assert stage_glob_matches(pattern, name) is matched


# ---------------------------------------------------------------- our real catalog


@pytest.fixture(scope="module")
def real() -> Catalog:
    return open_catalog(ROOT / "jenkins/stages.yml", ROOT / "test-db").catalog


@pytest.mark.parametrize(
    "name",
    [
        "CPU-Generic-1",
        "A10-PyTorch-1",
        "DGX_H100-PyTorch-1",
        "DGX_H100-4_GPUs-PyTorch-1",
        "DGX_B200-PyTorch-1",
        "DGX_B200-PyTorch-PerfSanity-1",
        "DGX_B200-PyTorch-PerfSanity-Post-Merge-1",
        "DGX_H200-PyTorch-1",
        "DGX_H200-PyTorch-Perf-1",
        "CPU-Build_Docs",
        "CPU-PackageSanityCheck-PY311",
    ],
)
def test_the_real_catalog_has_the_promised_stages(real: Catalog, name: str) -> None:
    assert name in real.names


def test_the_real_catalog_has_post_merge_multi_gpu_and_perf_stages(real: Catalog) -> None:
    assert any(stage.post_merge for stage in real.stages)
    assert any(stage.multi_gpu and stage.gpu_count == 4 for stage in real.stages)
    assert [s.name.name for s in real.stages if s.mode.value == "perf"] == ["DGX_H200-PyTorch-Perf-1"]


def test_the_real_b200_perf_sanity_rows_match_the_reference(real: Catalog) -> None:
    row = real.stage("DGX_B200-PyTorch-PerfSanity-Post-Merge-1")
    assert (row.context, row.shard, row.splits, row.gpu_count) == ("l0_b200_perf_sanity", 1, 1, 1)


def test_stages_list_json_is_valid_json_for_every_real_stage(real: Catalog) -> None:
    """Each stage's object is plain JSON (exact str, int, bool, None or lists of them: no tuple, enum or NaN,
    which json.dumps would turn into something else), with the documented keys."""
    objects = [stage.to_json() for stage in real.stages]
    assert [key for o in objects for key, value in o.items() if not _plain_json(value)] == []
    assert json.loads(json.dumps(objects, allow_nan=False)) == objects
    assert {tuple(o) for o in objects} == {JSON_KEYS}
    assert [o["name"] for o in objects] == list(real.names)


def _plain_json(value: object) -> bool:
    if type(value) is list:
        return all(_plain_json(item) for item in value)
    if type(value) is float:
        return math.isfinite(value)
    return value is None or type(value) in (str, int, bool)


JSON_KEYS = (
    *("name", "family", "platform", "context", "shard", "splits", "gpu", "gpu_count", "node_count", "backend"),
    *("mode", "post_merge", "multi_gpu", "on_demand", "timeout_minutes", "arch", "executor"),
)


FAMILY = "- {name: A10-PyTorch, platform: a10, context: l0_x, splits: 1%s}\n"
OCTAL = "Hint: YAML 1.1 reads a leading 0 as octal and YAML 1.2 as decimal: drop the leading zeros"
BASE_60 = "Hint: YAML 1.1 reads '1:30' as a base-60 number (1:30 is 90): write the whole number"
NOT_FINITE = "Hint: write a finite number, at most about 1.8e308"
MARGIN_HINT = "Hint: the margin multiplies the predicted minutes: 2 doubles them"
ODD_NUMBERS = [
    ("margin inf", "timeouts: {margin: .inf}", "",
     f"2:20 (timeouts.margin): expected a number, found '.inf' {NOT_FINITE}"),
    ("margin nan", "timeouts: {margin: .nan}", "",
     f"2:20 (timeouts.margin): expected a number, found '.nan' {NOT_FINITE}"),
    ("margin overflow", "timeouts: {margin: 1.0e+400}", "",
     f"2:20 (timeouts.margin): expected a number, found '1.0e+400' {NOT_FINITE}"),
    ("margin huge", "timeouts: {margin: 1.0e+300}", "",
     f"2:20 (timeouts.margin): expected a margin of at most 100, found 1.0e+300 {MARGIN_HINT}"),
    ("margin underscores", "timeouts: {margin: 1_000.5}", "",
     f"2:20 (timeouts.margin): expected a margin of at most 100, found 1_000.5 {MARGIN_HINT}"),
    ("margin base 60", "timeouts: {margin: 1:30.5}", "", "2:20 (timeouts.margin): expected a number, found '1:30.5' "
     "Hint: YAML 1.1 reads '1:30.5' as a base-60 number: write the number itself"),
    ("minimum base 60", "timeouts: {minimum_minutes: 1:30}", "",
     f"2:29 (timeouts.minimum_minutes): expected minutes >= 1, found '1:30' {BASE_60}"),
    ("minimum over a week", "timeouts: {minimum_minutes: 99999}", "",
     "2:29 (timeouts.minimum_minutes): expected minutes >= 1, found 99999 Hint: the largest accepted is 10080"),
    ("splits octal", "", ", splits: 07", f"4:61 (families[0].splits): expected a shard count of at least 1, or auto, "
     f"found '07' {OCTAL}"),
    ("splits base 60", "", ", splits: 1:30", "4:61 (families[0].splits): expected a shard count of at least 1, or "
     f"auto, found '1:30' {BASE_60}"),
    ("splits digits", "", ", splits: " + "1" * 5000, "4:61 (families[0].splits): expected a shard count of at least "
     "1, or auto, found '" + "1" * 30 + "'... (5000 characters) Hint: that is more than 19 digits: the largest whole "
     "number read is 9223372036854775807"),
    ("splits too many", "", ", splits: 2000", "4:61 (families[0].splits): expected a shard count of at least 1, or "
     "auto, found '2000' Hint: a family has at most 1000 shards; write e.g. `splits: 2`, or `splits: auto` with "
     "`budget_minutes`"),
    ("gpu_count octal", "", ", gpu_count: 01", f"4:75 (families[0].gpu_count): expected a whole number, found '01' "
     f"{OCTAL}"),
    ("timeout base 60", "", ", timeout_minutes: 1:30", "4:81 (families[0].timeout_minutes): expected minutes >= 1, "
     f"found '1:30' {BASE_60}"),
    ("timeout over a week", "", ", timeout_minutes: 20000", "4:81 (families[0].timeout_minutes): expected minutes >= "
     "1, found 20000 Hint: the largest accepted is 10080"),
    ("budget inf", "", ", splits: auto, budget_minutes: .inf",
     f"4:83 (families[0].budget_minutes): expected minutes, found '.inf' {NOT_FINITE}"),
    ("budget overflow", "", ", splits: auto, budget_minutes: 1.0e+400",
     f"4:83 (families[0].budget_minutes): expected minutes, found '1.0e+400' {NOT_FINITE}"),
    ("budget over a week", "", ", splits: auto, budget_minutes: 1.0e+300",
     "4:83 (families[0].budget_minutes): expected minutes <= 10080 (a week), found 1.0e+300"),
    ("on_demand tagged word", "", ", on_demand: !!bool maybe",
     "4:75 (families[0].on_demand): expected true or false, found 'maybe'"),
    ("group name with nul", "file_groups:\n- {name: \"a\\0\", paths: [x/], stages: ['*']}", "",
     "3:10 (file_groups[0].name): expected a group name, found 'a\\x00' Hint: it holds the invisible character "
     "U+0000: delete it"),
]  # fmt: skip


@pytest.mark.parametrize(("top", "family", "message"), [r[1:] for r in ODD_NUMBERS], ids=[r[0] for r in ODD_NUMBERS])
def test_odd_numbers_and_hidden_characters_are_located_errors(top: str, family: str, message: str) -> None:
    text = f"version: 1\n{top or 'multi_gpu_paths: [x/]'}\nfamilies:\n" + FAMILY % family
    text = text.replace("splits: 1, splits:", "splits:")  # a family that writes its own splits
    with pytest.raises(StageError) as raised:
        parse(text)
    assert str(raised.value) == f"stages.yml:{message}"


def test_a_platform_with_a_huge_gpu_count_has_enough_gpus() -> None:
    text = "version: 1\nfamilies:\n- {name: DGX_H100-4_GPUs-PyTorch, platform: dgx-x" + "9" * 5000
    assert parse(text + ", context: l0_x, splits: 1}\n").families[0].platform.startswith("dgx-x999")


def test_resolving_a_catalog_without_auto_families_balances_no_shards(monkeypatch: pytest.MonkeyPatch) -> None:
    """`stages list` and every verb that loads the catalog render each family once and never run the
    balancer: shard counts are written, timeouts come from a greedy bound (only `splits: auto` shards)."""

    def refuse(*_args: object) -> list[list[int]]:
        raise AssertionError("the catalog ran a sharding algorithm")

    monkeypatch.setattr("ci_tool.stages.shard.ALGORITHMS", dict.fromkeys(ALGORITHMS, refuse))
    catalog = parse(VALID.replace("splits: auto\n  budget_minutes: 10", "splits: 2"))
    assert [family.splits for family in catalog.families] == [1, 2, 3]


def test_skip_test_runs_exactly_the_docs_and_package_sanity_stages(real: Catalog) -> None:
    request = parse_comment("/bot run --skip-test").selection_request()
    selection = select_stages(real, request, engine=Engine.LOCAL)
    assert selection.names == ("CPU-Build_Docs", "CPU-PackageSanityCheck-PY311")


def test_an_auto_pool_runs_on_slurm_unless_the_family_says_otherwise() -> None:
    family = "{name: DGX_B200-PyTorch, platform: 'auto:dgx-b200-flex', context: l0_x, splits: 1}"
    text = f"version: 1\nfamilies:\n- {family}\n"
    assert [(s.name.name, s.executor) for s in parse(text).stages] == [("DGX_B200-PyTorch-1", "slurm")]


def test_a_family_with_more_shards_than_tests_keeps_its_stage_names_and_empty_shards() -> None:
    text = "version: 1\nfamilies:\n- {name: A10-PyTorch, platform: a10, context: l0_x, splits: 5}\n"
    catalog = parse(text)
    assert catalog.names == tuple(f"A10-PyTorch-{k}" for k in range(1, 6))
    plans = Planner(DB, DURATIONS).selection(catalog.stages)
    assert [len(plan.lines) for plan in plans.values()] == [1, 1, 1, 0, 0]
    assert sorted(line.test_id for plan in plans.values() for line in plan.lines) == [
        "tests/a_test.py", "tests/b_test.py", "tests/c_test.py"
    ]  # fmt: skip


def test_a_timeout_past_the_cap_is_capped_and_says_so() -> None:
    rule = TimeoutRule()
    assert (rule.minutes(3 * 3600), rule.explain(3 * 3600)) == (
        240, "derived: 2 x the slowest shard's predicted 180.0 min, capped at 240"
    )  # fmt: skip
    assert rule.explain(60) == "derived: 2 x the slowest shard's predicted 1.0 min, raised to the minimum 30"
    assert TimeoutRule(maximum_minutes=600).minutes(3 * 3600) == 360
    text = CPU_ONLY.replace("families:", "timeouts: {maximum_minutes: 20}\nfamilies:")
    with pytest.raises(StageError, match=r"maximum_minutes\): expected minutes >= 30 \(the minimum\), found 20"):
        parse(text)


PLATFORMS = """\
version: 1
platforms:
  dgx-h200-flex: {gpu: H200, system_gpu_count: 1, gpu_memory: 143771, cpu: x86_64, supports_fp8: true}
families:
- {name: DGX_B200-PyTorch, platform: 'auto:dgx-h200-flex', context: l0_h200, splits: 1}
- {name: A10-PyTorch, platform: a10, context: l0_h200, splits: 1}
"""


def test_a_platforms_facts_render_what_its_runners_will() -> None:
    """A B200-named family on a pool whose runners report H200 renders the H200 block; a platform the catalog
    says nothing of renders with the stage name's facts (A10: no H200 test)."""
    catalog = parse(PLATFORMS)
    plans = Planner(DB, DURATIONS).selection(catalog.stages, allow_empty=True)
    assert {name: [line.test_id for line in plan.lines] for name, plan in plans.items()} == {
        "DGX_B200-PyTorch-1": ["tests/h200_test.py"],
        "A10-PyTorch-1": [],
    }
    assert catalog.families[0].facts == {
        "gpu": "H200", "system_gpu_count": 1, "gpu_memory": 143771, "cpu": "x86_64", "supports_fp8": True
    }  # fmt: skip
    assert catalog.families[1].facts is None


def test_change_based_selection_narrows_a_family_as_its_platform_renders_it() -> None:
    """A change to the H200 test runs it on the B200-named family whose runners report H200: rendered with the
    stage name's facts alone, that family kept nothing, and the change ran no test."""
    planner = Planner(DB, DURATIONS)
    text = PLATFORMS.replace("families:\n", "change_rules: {tests: [tests/]}\nfamilies:\n")
    loaded = LoadedCatalog(read_catalog(text, planner, file="stages.yml"), planner)
    changes = ChangeSet(("tests/h200_test.py",), base=None, now={})
    selection = select_for_change(loaded, parse_comment("/bot run").selection_request(), engine=Engine.LOCAL,
                                  changes=changes)  # fmt: skip
    assert selection.names == ("DGX_B200-PyTorch-1-cbts",)
    plan = planner.selection(selection.selected)["DGX_B200-PyTorch-1-cbts"]
    assert [line.test_id for line in plan.lines] == ["tests/h200_test.py"]


@pytest.mark.parametrize(
    ("platforms", "message"),
    [
        ("{a10: {gpuu: A10}}", "(platforms.a10.gpuu): expected one of sysname"),
        ("{a10: {system_gpu_count: many}}", "(platforms.a10.system_gpu_count): expected a GPU count"),
        ("{'auto:a10': {gpu: A10}}", "(platforms.auto:a10): expected a platform label without 'auto:', found"),
    ],
    ids=["unknown-key", "bad-kind", "auto-label"],
)
def test_bad_platform_facts_are_located(platforms: str, message: str) -> None:
    text = CPU_ONLY.replace("families:", f"platforms: {platforms}\nfamilies:")
    with pytest.raises(StageError) as raised:
        parse(text)
    assert message in str(raised.value)


def test_the_check_policy_is_read_from_the_catalog() -> None:
    text = (
        "version: 1\nchecks: {redundant_timeouts: false, stale_waives_exempt: [unittest/]}\n"
        "families:\n- {name: CPU-Generic, platform: cpu, context: l0_x, splits: 1}\n"
    )
    checks = parse(text).checks
    found = (checks.redundant_timeouts, checks.stale_waives, checks.exempts("unittest/a.py"), checks.exempts("b.py"))
    assert found == (False, True, True, False)
    assert parse(CPU_ONLY).checks.redundant_timeouts is True
