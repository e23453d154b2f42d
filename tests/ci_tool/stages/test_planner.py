"""The one planner every consumer plans catalog stages with: a stage, a family's whole render, a selection; the
waives file reaches every plan it makes, and the facts are the ones it holds."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ci_tool.bot.grammar import parse_comment
from ci_tool.change.value import ChangeSet
from ci_tool.errors import StageError
from ci_tool.stages.catalog import Catalog
from ci_tool.stages.catalog_load import open_catalog, read_catalog
from ci_tool.stages.engines import Engine
from ci_tool.stages.planner import Planner
from ci_tool.stages.select import select_for_change
from ci_tool.testdb.model import TestDb
from tests.helpers.plan_catalog import CATALOG, DURATIONS
from tests.helpers.planner_calls import PlannerCalls

WAIVES = "test-db/waives.txt"
CBTS = Path(__file__).parent / "catalogs" / "cbts"
WITH_DOCS = CATALOG + "- {name: CPU-Build_Docs, platform: cpu}\n"


@pytest.fixture
def catalog(db: TestDb) -> Catalog:
    return read_catalog(WITH_DOCS, Planner(db, DURATIONS), file="stages.yml")


def test_a_selection_plans_each_stage_as_planning_it_alone_does(db: TestDb, catalog: Catalog) -> None:
    planner = Planner(db, DURATIONS, waives_file=WAIVES)
    together = planner.selection(catalog.stages)
    assert together == {stage.name.name: planner.stage(stage) for stage in catalog.stages}
    assert {plan.waives_file for name, plan in together.items() if name != "CPU-Build_Docs"} == {WAIVES}


def test_a_family_runs_its_whole_render_unsharded_with_the_waives(db: TestDb, catalog: Catalog) -> None:
    family = catalog.stage("A10-PyTorch-1").family
    plan = Planner(db, DURATIONS, waives_file=WAIVES).family(family)
    shards = [Planner(db, DURATIONS).stage(catalog.stage(f"A10-PyTorch-{k}")) for k in (1, 2)]
    assert (plan.name, plan.shard, plan.waives_file) == (family.name, None, WAIVES)
    assert sorted(line.raw for line in plan.lines) == sorted(line.raw for s in shards for line in s.lines)


def test_the_facts_decide_the_render(db: TestDb, catalog: Catalog) -> None:
    """A machine's facts leave out what they rule out; the stage name's facts only (None) match a condition on
    a machine fact, as CI renders before a runner starts."""
    family = catalog.stage("A10-PyTorch-1").family
    no_fp8 = Planner(db, DURATIONS, sysinfo={"supports_fp8": False}).family(family)
    name_only = Planner(db, DURATIONS).family(family)
    rendered = [[line.raw for line in plan.rendered if line.raw == "t/fp8.py"] for plan in (no_fp8, name_only)]
    assert rendered == [[], ["t/fp8.py"]]


def test_a_family_that_is_no_test_stage_is_an_error(db: TestDb, catalog: Catalog) -> None:
    with pytest.raises(StageError, match=r"^expected a test stage to run, found 'CPU-Build_Docs' \(build_docs\)$"):
        Planner(db, DURATIONS).family(catalog.stage("CPU-Build_Docs").family)


def test_loading_selecting_narrowing_and_planning_render_each_list_once(planner_calls: PlannerCalls) -> None:
    """Catalog loading renders each family (its shard count and timeout); change-based selection narrows
    CPU-Generic to two shards from that render, and planning the selected `-cbts` stages splits it once and
    renders nothing again."""
    loaded = open_catalog(CBTS / "stages.yml", CBTS / "test-db")
    request = parse_comment("/bot run").selection_request()
    changes = ChangeSet(("tests/slow/test_big.py", "tests/unit/test_a.py"), base=None, now={})
    selection = select_for_change(loaded, request, engine=Engine.LOCAL, changes=changes)
    plans = loaded.planner.selection(selection.selected)
    assert list(plans) == ["CPU-Generic-1-cbts", "CPU-Generic-2-cbts"]
    assert set(planner_calls.renders.values()) == {1}
    assert (planner_calls.rendered("l0_cpu"), planner_calls.rendered("l0_gpu")) == (1, 3)  # 3 queries of l0_gpu
    assert list(planner_calls.splits.values()) == [1]


def test_planning_each_shard_of_a_family_splits_it_once(db: TestDb, planner_calls: PlannerCalls) -> None:
    planner = Planner(db, DURATIONS)
    catalog = read_catalog(CATALOG, planner, file="stages.yml")
    shards = [replace(planner, waives_file=WAIVES).stage(stage) for stage in catalog.stages_of(catalog.families[0])]
    assert [plan.name.name for plan in shards] == ["A10-PyTorch-1", "A10-PyTorch-2"]
    assert (planner_calls.rendered("l0_x"), list(planner_calls.splits.values())) == (2, [1])  # pre- and post-merge
