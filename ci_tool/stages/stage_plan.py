"""Planning's values: what a stage would run, decided before anything runs (stages/planner.py makes them).

    query    = the stage name's facts over sysinfo (None: stage facts only)   stages.query.render_query
    rendered = the context's lines matching the query                        testdb.select.render
    shards   = the rendered ids split across the family's shards by duration  stages.shard.plan_shards
    lines    = this stage's shard (the whole render when the family is not sharded); an id rendered
               twice (blocks with different markers) runs once, as its first line says
    isolated = its ISOLATION lines, each run in its own pytest process
    priority = the tests to run first, likeliest to fail first (the Planner's, stages/priority.py)

A family narrowed by change-based selection (its `line_filter`) renders the same way and then keeps only the
lines the filter keeps, over its narrowed shard count; its stages are named `<family>-<K>-cbts`.

A family is rendered (`FamilyRender`) and split (`FamilyPlan`) once, and each of its stages takes its shard
(`FamilyPlan.stage`). A family is sharded when its mode shards (perf mode runs the whole list) and it has more
than one shard.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ci_tool.errors import StageError
from ci_tool.stages.modes import PerfGate
from ci_tool.stages.names import StageName
from ci_tool.stages.priority import LIST_ORDER, Priority
from ci_tool.stages.shard import ShardPlan
from ci_tool.testdb.lines import TestLine


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
    splits: int  # the shard count (resolved for AutoSplits.AUTO)
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


def listless_plan(stage: StageName) -> StagePlan:
    """The plan of a stage that renders no list (the docs stage): its job is all it runs."""
    policy = stage.policy
    return StagePlan(stage, "", {}, (), (), (), None, 1, (), policy.perf_gate)
