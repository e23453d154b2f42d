"""One planner: how every consumer (catalog loading, change-based selection, a local or Slurm run, `stage run`,
`stage show`, `waive verify`, the bot's preview) renders and plans catalog families, over one loaded test-db
and durations, the facts lists render with, and the waives file the runner reads. Pure: values in, values out
(stage_plan.py holds the values).

    render(listing)       a family's list rendered and estimated (catalog loading decides shard counts and
                          timeouts from it; change-based selection, what a narrowed family keeps)
    family_plan(family)   a family's render split over its shards
    stage(stage)          one catalog stage: its shard of its family's split
    family(family)        a test family's whole render as one unsharded stage (`stage run FAMILY`)
    selection(stages)     several catalog stages
    stage_of_list(name, context)   a stage of a list no catalog names (a test's, a benchmark's)

A planner renders a context for a query once and splits a family once, whichever of these asks and however
many of its stages are planned: a memo holds them, shared by the planners derived from it with
`dataclasses.replace` (other facts, waives file or ordering) while they keep its test-db and durations. A
narrowed family's render filters its whole render: change-based selection renders no list a second time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from ci_tool.change.narrowing import LineFilter
from ci_tool.errors import StageError
from ci_tool.stages.catalog import Family, FamilyList, Stage
from ci_tool.stages.durations import Durations, estimate_seconds
from ci_tool.stages.names import StageName
from ci_tool.stages.priority import Likelihood, prioritize
from ci_tool.stages.query import QueryValue, render_query
from ci_tool.stages.shard import plan_shards
from ci_tool.stages.stage_plan import FamilyPlan, FamilyRender, StagePlan, listless_plan
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.select import empty_render, normalize_query, render

_WholeKey = tuple[str, tuple[tuple[str, str | None], ...]]  # (context, the query's items, sorted)
_ListKey = tuple[_WholeKey, LineFilter | None, str | None]  # (..., the filter, the GPU token it filters for)


@dataclass
class _Memo:
    """What a planner rendered and split, for the test-db and durations it was made over."""

    db: TestDb
    durations: Durations
    renders: dict[_ListKey, FamilyRender] = field(default_factory=dict)
    plans: dict[tuple[str, int, _ListKey], FamilyPlan] = field(default_factory=dict)


@dataclass(frozen=True)
class Planner:
    db: TestDb
    durations: Durations
    # the facts a stage's query is merged over (a machine's probe); None: what the catalog says its platform's
    # runners report (Family.facts), else the stage name's facts only (what CI knows before a runner starts,
    # and how a Slurm job renders: its node is not this machine)
    sysinfo: Mapping[str, QueryValue] | None = None
    waives_file: str | None = None  # for the runner; planning does not read it
    likelihood: Likelihood | None = None  # None: each stage runs in its list's order
    memo: _Memo | None = field(default=None, compare=False, repr=False)  # made here; `replace` carries it

    def __post_init__(self) -> None:
        memo = self.memo
        if memo is None or memo.db is not self.db or memo.durations is not self.durations:
            object.__setattr__(self, "memo", _Memo(self.db, self.durations))

    def render(self, listing: FamilyList, *, allow_empty: bool = False) -> FamilyRender:
        """A family's list (its name without a shard index) rendered and estimated; a narrowed family's render
        keeps the lines its filter keeps, and its estimate is at most its whole render's."""
        return self._render(listing, allow_empty=allow_empty)[1]

    def family_plan(self, family: Family, *, allow_empty: bool = False) -> FamilyPlan:
        """A family's render split over its shard count (`allow_empty`: it may render nothing)."""
        return self._family_plan(family.listing, family.splits, allow_empty=allow_empty)

    def stage(self, stage: Stage) -> StagePlan:
        """One catalog stage (its context, shard count and arch come from the catalog)."""
        return self._ordered(self._stage(stage))

    def family(self, family: Family) -> StagePlan:
        """A test family's whole render as one stage, unsharded."""
        if not family.name.is_test:
            raise StageError(f"expected a test stage to run, found {family.name.name!r} ({family.name.kind.value})")
        whole = self.family_plan(replace(family, splits=1, line_filter=None))
        return self._ordered(replace(whole.stage(1, waives_file=self.waives_file), name=family.name))

    def selection(self, stages: Iterable[Stage], *, allow_empty: bool = False) -> dict[str, StagePlan]:
        """Catalog stages: stage name -> plan, in the given order (`allow_empty`: a family may render nothing)."""
        return {stage.name.name: self._ordered(self._stage(stage, allow_empty=allow_empty)) for stage in stages}

    def stage_of_list(self, name: StageName, context: str, *, splits: int = 1) -> StagePlan:
        """The stage `name` (shard K of `splits` for a name ending in K; a family name: its whole render) of the
        list of `context`, planned as a catalog family of that name and shard count plans it."""
        family = replace(name, name=name.family, shard=None, cbts=False, attempt=None)
        planned = self._family_plan(FamilyList(family, context), splits)
        plan = planned.stage(name.shard or 1, waives_file=self.waives_file)
        return self._ordered(plan if name.shard is not None else replace(plan, name=name))

    @property
    def _memo(self) -> _Memo:
        assert self.memo is not None  # __post_init__ makes it
        return self.memo

    def _stage(self, stage: Stage, *, allow_empty: bool = False) -> StagePlan:
        if not stage.context:
            return listless_plan(stage.name)
        plan = self.family_plan(stage.family, allow_empty=allow_empty).stage(stage.shard, waives_file=self.waives_file)
        return plan if stage.name.shard is not None else replace(plan, name=stage.name)

    def _family_plan(self, listing: FamilyList, splits: int, *, allow_empty: bool = False) -> FamilyPlan:
        key, found = self._render(listing, allow_empty=allow_empty)
        plans = self._memo.plans
        planned = plans.get((listing.name.name, splits, key))
        if planned is None:
            planned = plans[(listing.name.name, splits, key)] = self._split(listing, splits, found)
        return planned

    def _render(self, listing: FamilyList, *, allow_empty: bool) -> tuple[_ListKey, FamilyRender]:
        facts = self.sysinfo if self.sysinfo is not None else listing.facts
        query = normalize_query(render_query(listing.name, facts, arch=listing.arch))
        whole_key: _WholeKey = (listing.context, tuple(sorted(query.items())))
        whole = self._whole(whole_key, query)
        line_filter = listing.line_filter
        if line_filter is None:
            if not whole.rendered and not allow_empty:
                raise empty_render(self.db, listing.context, query)
            return (whole_key, None, None), whole
        key: _ListKey = (whole_key, line_filter, listing.name.gpu)
        found = self._memo.renders.get(key)
        if found is None:
            found = self._memo.renders[key] = self._narrowed(whole, listing, line_filter)
        if not found.rendered and not allow_empty:
            raise StageError(
                f"expected the narrowed list of {listing.name.name!r} to keep a line of context "
                f"{listing.context!r} here, found none",
                hint="change-based selection chose it from the catalog's facts; this machine renders other lines",
            )
        return key, found

    def _whole(self, key: _WholeKey, query: Mapping[str, str | None]) -> FamilyRender:
        """The context's render for the query (memoized: the one place a planner renders a list)."""
        memo_key: _ListKey = (key, None, None)
        found = self._memo.renders.get(memo_key)
        if found is None:
            rendered = tuple(render(self.db, key[0], query, allow_empty=True))
            ids = tuple(dict.fromkeys(line.test_id for line in rendered))
            found = self._memo.renders[memo_key] = FamilyRender(query, rendered, ids, self._estimates(ids))
        return found

    def _narrowed(self, whole: FamilyRender, listing: FamilyList, line_filter: LineFilter) -> FamilyRender:
        rendered = line_filter.apply(whole.rendered, context=listing.context, gpu=listing.name.gpu)
        ids = tuple(dict.fromkeys(line.test_id for line in rendered))
        seconds = self._estimates(ids)
        if seconds:
            # A narrowed line lies under a whole line with its filter, and the lines share the whole's processes:
            # it runs a part of the whole's tests, never more. Its own estimate can be more (a node id the
            # durations do not know counts the list's mean; its folder sums only the ids they know), so the
            # whole's caps it.
            cap, total = math.fsum(whole.seconds), math.fsum(seconds)
            seconds = tuple(part * cap / total for part in seconds) if total > cap else seconds
        return FamilyRender(whole.query, rendered, ids, seconds)

    def _estimates(self, ids: tuple[str, ...]) -> tuple[float, ...]:
        estimates = estimate_seconds(ids, self.durations).seconds if ids else {}
        return tuple(estimates[test_id] for test_id in ids)

    @staticmethod
    def _split(listing: FamilyList, splits: int, found: FamilyRender) -> FamilyPlan:
        """A family's render split over its shards: sharded when its mode shards and it has more than one."""
        shard_plan = None
        if found.test_ids and listing.name.policy.sharded and splits > 1:
            isolated = [line.test_id for line in found.rendered if line.isolation]
            # the render's own estimates (a narrowed one's capped)
            estimated = dict(zip(found.test_ids, found.seconds, strict=True))
            shard_plan = plan_shards(found.test_ids, estimated, splits=splits, isolated=isolated, empty_shards_ok=True)
        narrowed = listing.line_filter is not None
        return FamilyPlan(listing.name, listing.context, found.query, found.rendered, splits, shard_plan,
                          math.fsum(found.seconds), narrowed)  # fmt: skip

    def _ordered(self, plan: StagePlan) -> StagePlan:
        """The plan with the tests its processes run first, when this planner orders by likelihood."""
        if self.likelihood is None:
            return plan
        return replace(plan, priority=prioritize(self.likelihood, plan.lines, self.durations))
