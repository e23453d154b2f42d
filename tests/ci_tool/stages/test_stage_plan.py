"""Planning: query, render, shard and predicted seconds per stage, each family planned once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ci_tool.change.narrowing import LineFilter, NarrowPath
from ci_tool.errors import StageError, TestDbError
from ci_tool.stages.catalog import Catalog, Family, FamilyList
from ci_tool.stages.catalog_load import read_catalog
from ci_tool.stages.durations import estimate_seconds
from ci_tool.stages.modes import PERF_PYTEST_ARGS
from ci_tool.stages.names import parse_family_name, parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.model import TestDb
from tests.helpers.plan_catalog import CATALOG, DURATIONS


def test_an_unsharded_family_runs_its_whole_render(db: TestDb) -> None:
    plan = Planner(db, DURATIONS).stage_of_list(parse_stage_name("A10-PyTorch-1"), "l0_x")
    assert [line.raw for line in plan.lines] == ["t/a.py", "t/b.py ISOLATION", "t/c.py", "t/d.py", "t/fp8.py"]
    assert (plan.shard, plan.shards, plan.predicted_seconds, plan.shard_plan) == (None, 1, 1250.0, None)
    assert [line.raw for line in plan.isolated] == ["t/b.py ISOLATION"]
    assert [line.raw for line in plan.regular] == ["t/a.py", "t/c.py", "t/d.py", "t/fp8.py"]


def test_an_id_rendered_twice_runs_once_as_first_written(db: TestDb) -> None:
    plan = Planner(db, DURATIONS).stage_of_list(parse_stage_name("A10-PyTorch-1"), "l0_x", splits=2)
    assert [line.raw for line in plan.rendered].count("t/a.py TIMEOUT (90)") == 1  # rendered, not run twice
    assert "t/a.py TIMEOUT (90)" not in [line.raw for line in plan.lines]


@pytest.mark.parametrize(
    ("shard", "lines", "seconds"),
    [(1, ["t/a.py", "t/fp8.py"], 650.0), (2, ["t/b.py ISOLATION", "t/c.py", "t/d.py"], 600.0)],
)
def test_each_shard_takes_its_share(db: TestDb, shard: int, lines: list[str], seconds: float) -> None:
    name = parse_stage_name(f"A10-PyTorch-{shard}")
    plan = Planner(db, DURATIONS).stage_of_list(name, "l0_x", splits=2)
    assert ([line.raw for line in plan.lines], plan.predicted_seconds, plan.shard, plan.shards) == (
        lines,
        seconds,
        shard,
        2,
    )
    assert plan.shard_plan is not None and plan.shard_plan.makespan_seconds == 650.0


def test_perf_mode_is_never_sharded_and_adds_its_options(db: TestDb) -> None:
    plan = Planner(db, {}).stage_of_list(parse_stage_name("H100_PCIe-PyTorch-Perf-1"), "l0_x")
    assert (len(plan.lines), plan.isolated, plan.pytest_args, plan.shard) == (5, (), PERF_PYTEST_ARGS, None)


@pytest.mark.parametrize(
    ("sysinfo", "rendered"),
    [
        (None, 6),  # stage facts only: supports_fp8 is unknown, so its block matches
        ({"supports_fp8": False, "gpu": "A10G"}, 4),
        ({"supports_fp8": True}, 6),
    ],
    ids=["no sysinfo", "no fp8", "fp8"],
)
def test_sysinfo_is_merged_under_the_stage_facts(db: TestDb, sysinfo: dict[str, object] | None, rendered: int) -> None:
    plan = Planner(db, {}, sysinfo=sysinfo).stage_of_list(parse_stage_name("A10-PyTorch-1"), "l0_x")
    assert len(plan.rendered) == rendered
    assert plan.query["gpu"] == (sysinfo or {}).get("gpu", "A10")  # the probe's GPU, else the name's token


def test_a_family_render_estimates_each_distinct_test(db: TestDb) -> None:
    found = Planner(db, DURATIONS).render(FamilyList(parse_family_name("A10-PyTorch"), "l0_x"))
    assert len(found.test_ids) == len(set(found.test_ids)) == len(found.seconds) > 0
    assert found.seconds == tuple(estimate_seconds(found.test_ids, DURATIONS).seconds[t] for t in found.test_ids)


def test_a_narrowed_render_is_estimated_at_most_as_its_whole_render(db: TestDb) -> None:
    """Node ids of t/c.py the durations do not know count the mean of the narrowed list's known ones (t/d.py's
    12 s each): the list runs t/d.py and a part of t/c.py, so its estimate is capped at the whole render's."""
    name, durations = parse_family_name("A10-PyTorch"), {"t/a.py": 2.0, "t/c.py::t0": 4.0, "t/d.py": 12.0}
    narrowing = LineFilter((NarrowPath("t/d.py"), *(NarrowPath(f"t/c.py::t{k}") for k in range(1, 6))))
    planner = Planner(db, durations)
    whole = planner.render(FamilyList(name, "l0_x"))
    narrowed = planner.render(FamilyList(name, "l0_x", line_filter=narrowing))
    estimated = estimate_seconds(narrowed.test_ids, durations).seconds
    assert (len(narrowed.test_ids), sum(estimated.values()) > sum(whole.seconds)) == (6, True)
    assert sum(narrowed.seconds) == pytest.approx(sum(whole.seconds))
    split = planner.family_plan(replace(_family(db), line_filter=narrowing))
    assert split.makespan_seconds <= sum(whole.seconds) / 2 + 1e-9  # the shards split the capped estimates


def test_an_empty_render_is_an_error_unless_allowed(db: TestDb) -> None:
    name = parse_family_name("A10-PyTorch")
    with pytest.raises(TestDbError, match="found an empty render of context 'l0_empty'"):
        Planner(db, {}).render(FamilyList(name, "l0_empty"))
    family = replace(_family(db), context="l0_empty", splits=3)
    empty = Planner(db, {}).family_plan(family, allow_empty=True)
    assert (empty.rendered, empty.splits, empty.makespan_seconds, empty.stage(3).lines) == ((), 3, 0.0, ())


def test_a_shard_outside_the_family_is_an_error(db: TestDb) -> None:
    family = Planner(db, {}).family_plan(_family(db))
    with pytest.raises(StageError) as caught:
        family.stage(3)
    assert str(caught.value) == "expected a shard index from 1 to 2 for family 'A10-PyTorch', found 3"




def _family(db: TestDb) -> Family:
    """The catalog's A10-PyTorch: context l0_x, 2 shards."""
    return read_catalog(CATALOG, Planner(db, DURATIONS), file="stages.yml").families[0]


def test_plan_catalog_matches_planning_each_stage_alone(db: TestDb) -> None:
    catalog: Catalog = read_catalog(CATALOG, Planner(db, DURATIONS), file="stages.yml")
    plans = Planner(db, DURATIONS).selection(catalog.stages)
    alone = {
        stage.name.name: Planner(db, DURATIONS).stage_of_list(stage.name, stage.context, splits=stage.splits)
        for stage in catalog.stages
    }
    assert (list(plans), plans) == (list(catalog.names), alone)
    assert [line.raw for line in plans["A10-PyTorch-Post-Merge-1"].lines] == ["t/post.py"]


def test_a_selection_plans_a_subset_in_the_given_order(db: TestDb) -> None:
    catalog = read_catalog(CATALOG, Planner(db, DURATIONS), file="stages.yml")
    subset = [catalog.stage("A10-PyTorch-2"), catalog.stage("A10-PyTorch-1")]
    assert list(Planner(db, DURATIONS).selection(subset)) == ["A10-PyTorch-2", "A10-PyTorch-1"]


def test_plan_stage_accepts_a_family_name_as_its_only_shard(db: TestDb) -> None:
    plan = Planner(db, {}).stage_of_list(parse_family_name("A10-PyTorch"), "l0_x")
    assert (plan.name.name, plan.shard, len(plan.lines)) == ("A10-PyTorch", None, 5)
