"""Planning: what a stage would run, decided before anything runs. Pure (values in, values out).

    query    = the stage name's facts over sysinfo (None: stage facts only)   stages.query.render_query
    rendered = the context's lines matching the query                        testdb.select.render
    shards   = the rendered ids split across the family's shards by duration  stages.shard.plan_shards
    lines    = this stage's shard (the whole render when the family is not sharded); an id rendered
               twice (blocks with different markers) runs once, as its first line says
    isolated = its ISOLATION lines, each run in its own pytest process
    priority = the tests to run first, likeliest to fail first (the Planner's, stages/priority.py)

A family narrowed by change-based selection (its `line_filter`) renders the same way and then keeps only the
lines the filter keeps, over its narrowed shard count; its stages are named `<family>-<K>-cbts`.

A family is planned once (`plan_family`) and each of its stages takes its shard (`FamilyPlan.stage`), so
planning the whole catalog (`plan_catalog`) renders and shards each family once. A family is sharded
when its mode shards (perf mode runs the whole list) and it has more than one shard. The same plan serves
`ci-tool stage show`, `ci-tool stage run` and `ci-tool bot plan`; the catalog resolves shard counts and
timeouts from a family's render alone (`render_family`), without sharding it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ci_tool.change.narrowing import LineFilter
from ci_tool.errors import StageError
from ci_tool.stages.durations import Durations, estimate_seconds
from ci_tool.stages.modes import PerfGate
from ci_tool.stages.names import StageName
from ci_tool.stages.priority import LIST_ORDER, Priority
from ci_tool.stages.query import QueryValue, render_query
from ci_tool.stages.shard import ShardPlan, plan_shards
from ci_tool.testdb.lines import TestLine
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.select import normalize_query, render

if TYPE_CHECKING:  # catalog.py imports this module (derived timeouts, auto splits)
    from ci_tool.stages.catalog import Catalog, Stage


@dataclass(frozen=True)
class StagePlan:
    """Everything one stage run needs. `shard` is None when the whole render runs (not sharded)."""

    name: StageName  # the stage (a family's name when its whole render runs as one stage)
    context: str
    query: Mapping[str, str | None]
    rendered: tuple[TestLine, ...]  # the whole render of the context
    lines: tuple[TestLine, ...]  # the lines this stage runs, in list order
    isolated: tuple[TestLine, ...]  # the subset of `lines` run one per process
    shard: int | None
    shards: int
    pytest_args: tuple[str, ...]  # the mode's options (perf mode)
    perf_gate: PerfGate  # what a perf regression does in this stage (exported to its tests)
    waives_file: str | None = None  # for the runner; planning does not read it
    predicted_seconds: float = 0.0  # of `lines`, from the durations (unknown entries: the mean, or 1 s)
    shard_plan: ShardPlan | None = None  # the family's split; None when not sharded
    priority: Priority = LIST_ORDER  # the tests its processes run first (stages/priority.py)

    @property
    def regular(self) -> tuple[TestLine, ...]:
        isolated = set(self.isolated)
        return tuple(line for line in self.lines if line not in isolated)

    @property
    def predicted_minutes(self) -> float:
        return self.predicted_seconds / 60


@dataclass(frozen=True)
class FamilyPlan:
    """A family's render and split, planned once for all of its stages."""

    family: StageName  # the family name (no shard)
    context: str
    query: Mapping[str, str | None]
    rendered: tuple[TestLine, ...]
    splits: int  # the shard count (resolved for splits="auto")
    shard_plan: ShardPlan | None  # None when not sharded or nothing rendered
    whole_seconds: float  # the predicted seconds of the whole render
    narrowed: bool = False  # by change-based selection: its stages are `<family>-<K>-cbts`

    @property
    def makespan_seconds(self) -> float:
        """The predicted seconds of the family's slowest stage."""
        return self.shard_plan.makespan_seconds if self.shard_plan is not None else self.whole_seconds

    def stage(self, shard: int, *, waives_file: str | None = None) -> StagePlan:
        """The plan of stage `<family>-<shard>`."""
        if not 1 <= shard <= self.splits:
            raise StageError(
                f"expected a shard index from 1 to {self.splits} for family {self.family.name!r}, found {shard}"
            )
        name = self.family.with_shard(shard) if self.family.is_test else self.family
        name = name.with_cbts() if self.narrowed else name
        policy = self.family.policy
        by_id = {line.test_id: line for line in reversed(self.rendered)}  # an id rendered twice: the first line
        lines = tuple(line for line in self.rendered if by_id[line.test_id] is line)
        seconds = self.whole_seconds
        if self.shard_plan is not None:
            chosen = self.shard_plan.shard(shard)
            lines, seconds = tuple(by_id[test_id] for test_id in chosen.test_ids), chosen.predicted_seconds
        return StagePlan(
            name=name,
            context=self.context,
            query=self.query,
            rendered=self.rendered,
            lines=lines,
            isolated=tuple(line for line in lines if line.isolation) if policy.sharded else (),
            shard=shard if self.shard_plan is not None else None,
            shards=self.splits if self.shard_plan is not None else 1,
            pytest_args=policy.pytest_args,
            perf_gate=policy.perf_gate,
            waives_file=waives_file,
            predicted_seconds=seconds,
            shard_plan=self.shard_plan,
        )


@dataclass(frozen=True)
class FamilyRender:
    """A family's render and each distinct test id's estimated seconds, in list order: what its shard count
    and timeout are decided from."""

    query: Mapping[str, str | None]
    rendered: tuple[TestLine, ...]
    test_ids: tuple[str, ...]  # distinct, in list order
    seconds: tuple[float, ...]  # per id


def render_family(
    family: StageName,
    *,
    db: TestDb,
    context: str,
    durations: Durations,
    sysinfo: Mapping[str, QueryValue] | None = None,
    arch: str = "x86_64",
    gpu: str | None = None,
    allow_empty: bool = False,
    line_filter: LineFilter | None = None,
) -> FamilyRender:
    """Render a family's list (a name without its shard index) and estimate its tests; a narrowed family's
    render keeps the lines its filter keeps, and its estimate is at most its whole render's."""
    query = normalize_query(render_query(family, sysinfo, arch=arch, gpu=gpu))
    whole = tuple(render(db, context, query, allow_empty=allow_empty or line_filter is not None))
    rendered = whole
    if line_filter is not None:
        rendered = line_filter.apply(whole, context=context, gpu=family.gpu)
        if not rendered and not allow_empty:
            raise StageError(
                f"expected the narrowed list of {family.name!r} to keep a line of context {context!r} here, found none",
                hint="change-based selection chose it from the stage facts; this machine renders other lines",
            )
    ids = tuple(dict.fromkeys(line.test_id for line in rendered))
    seconds = _estimates(ids, durations)
    if line_filter is not None and seconds:
        # A narrowed line lies under a whole line with its filter, and the lines share the whole's processes: it
        # runs a part of the whole's tests, never more. Its own estimate can be more (a node id the durations do
        # not know counts the list's mean; its folder sums only the ids they know), so the whole's caps it.
        cap = math.fsum(_estimates(tuple(dict.fromkeys(line.test_id for line in whole)), durations))
        total = math.fsum(seconds)
        seconds = tuple(part * cap / total for part in seconds) if total > cap else seconds
    return FamilyRender(query, rendered, ids, seconds)


def _estimates(ids: tuple[str, ...], durations: Durations) -> tuple[float, ...]:
    estimates = estimate_seconds(ids, durations).seconds if ids else {}
    return tuple(estimates[test_id] for test_id in ids)


def plan_family(
    family: StageName,
    *,
    db: TestDb,
    context: str,
    splits: int,
    durations: Durations,
    sysinfo: Mapping[str, QueryValue] | None = None,
    arch: str = "x86_64",
    gpu: str | None = None,
    allow_empty: bool = False,
    line_filter: LineFilter | None = None,
) -> FamilyPlan:
    """Render and split a family (a name without its shard index; see the module docstring)."""
    found = render_family(family, db=db, context=context, durations=durations, sysinfo=sysinfo, arch=arch, gpu=gpu,
                          allow_empty=allow_empty, line_filter=line_filter)  # fmt: skip
    shard_plan = None
    if found.test_ids and family.policy.sharded and splits > 1:
        isolated = [line.test_id for line in found.rendered if line.isolation]
        estimated = dict(zip(found.test_ids, found.seconds, strict=True))  # the render's own (a narrowed one's capped)
        shard_plan = plan_shards(found.test_ids, estimated, splits=splits, isolated=isolated, empty_shards_ok=True)
    whole_seconds = math.fsum(found.seconds)
    narrowed = line_filter is not None
    return FamilyPlan(family, context, found.query, found.rendered, splits, shard_plan, whole_seconds, narrowed)


def plan_stage(
    stage: StageName,
    *,
    db: TestDb,
    context: str,
    splits: int,
    durations: Durations,
    sysinfo: Mapping[str, QueryValue] | None = None,
    waives_file: str | None = None,
    arch: str = "x86_64",
    gpu: str | None = None,
    line_filter: LineFilter | None = None,
) -> StagePlan:
    """The plan of one stage: shard K of `splits` for a name ending in K (a family name: shard 1 of 1)."""
    family = stage if stage.shard is None else _family_of(stage)
    planned = plan_family(family, db=db, context=context, splits=splits, durations=durations, sysinfo=sysinfo,
                          arch=arch, gpu=gpu, line_filter=line_filter)  # fmt: skip
    plan = planned.stage(stage.shard or 1, waives_file=waives_file)
    return plan if stage.shard is not None else replace(plan, name=stage)


def listless_plan(stage: StageName) -> StagePlan:
    """The plan of a stage that renders no list (the docs stage): its job is all it runs."""
    policy = stage.policy
    return StagePlan(stage, "", {}, (), (), (), None, 1, (), policy.perf_gate)


def plan_catalog_stage(
    stage: Stage,
    *,
    db: TestDb,
    durations: Durations,
    sysinfo: Mapping[str, QueryValue] | None = None,
    waives_file: str | None = None,
    gpu: str | None = None,
) -> StagePlan:
    """The plan of one catalog stage (its context, shard count and arch come from the catalog)."""
    if not stage.context:
        return listless_plan(stage.name)
    return plan_stage(
        stage.name,
        db=db,
        context=stage.context,
        splits=stage.splits,
        durations=durations,
        sysinfo=sysinfo if sysinfo is not None else stage.family.facts,
        waives_file=waives_file,
        arch=stage.arch,
        gpu=gpu,
        line_filter=stage.family.line_filter,
    )


def plan_catalog(
    catalog: Catalog,
    *,
    db: TestDb,
    durations: Durations,
    sysinfo: Mapping[str, QueryValue] | None = None,
    allow_empty: bool = False,
) -> dict[str, StagePlan]:
    """Every stage of the catalog planned: stage name -> plan, in catalog order (each family once)."""
    return plan_stages(catalog.stages, db=db, durations=durations, sysinfo=sysinfo, allow_empty=allow_empty)


def plan_stages(
    stages: Iterable[Stage],
    *,
    db: TestDb,
    durations: Durations,
    sysinfo: Mapping[str, QueryValue] | None = None,
    waives_file: str | None = None,
    allow_empty: bool = False,
) -> dict[str, StagePlan]:
    """Catalog stages planned: stage name -> plan, in the given order; each family is planned once."""
    families: dict[tuple[str, bool], FamilyPlan] = {}
    plans: dict[str, StagePlan] = {}
    for stage in stages:
        family = stage.family
        if not family.context:
            plans[stage.name.name] = listless_plan(stage.name)
            continue
        key = (family.name.name, family.line_filter is not None)  # a narrowed family is planned apart
        planned = families.get(key)
        if planned is None:
            planned = plan_family(
                family.name,
                db=db,
                context=family.context,
                splits=family.splits,
                durations=durations,
                sysinfo=sysinfo if sysinfo is not None else family.facts,
                arch=family.arch,
                allow_empty=allow_empty,
                line_filter=family.line_filter,
            )
            families[key] = planned
        plans[stage.name.name] = planned.stage(stage.shard, waives_file=waives_file)
    return plans


def _family_of(stage: StageName) -> StageName:
    return replace(stage, name=stage.family, shard=None, cbts=False, attempt=None)
