"""One planner: how every consumer (a local or Slurm run, `stage run`, `stage show`, `waive verify`, the bot's
preview) plans catalog stages, over one loaded test-db and durations, the facts lists render with, and the
waives file the runner reads. Pure: plan.py does the rendering and splitting.

    stage(stage)          one catalog stage: its shard of its family's split
    family(family)        a test family's whole render as one unsharded stage (`stage run FAMILY`)
    selection(stages)     several catalog stages, each family rendered and split once
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ci_tool.errors import StageError
from ci_tool.stages.catalog import Family, Stage
from ci_tool.stages.durations import Durations
from ci_tool.stages.plan import StagePlan, plan_catalog_stage, plan_stage, plan_stages
from ci_tool.stages.priority import Likelihood, prioritize
from ci_tool.stages.query import QueryValue
from ci_tool.testdb.model import TestDb


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

    def stage(self, stage: Stage) -> StagePlan:
        """One catalog stage (its context, shard count and arch come from the catalog)."""
        return self._ordered(
            plan_catalog_stage(
                stage, db=self.db, durations=self.durations, sysinfo=self.sysinfo, waives_file=self.waives_file
            )
        )

    def family(self, family: Family) -> StagePlan:
        """A test family's whole render as one stage, unsharded."""
        if not family.name.is_test:
            raise StageError(f"expected a test stage to run, found {family.name.name!r} ({family.name.kind.value})")
        return self._ordered(
            plan_stage(
                family.name,
                db=self.db,
                context=family.context,
                splits=1,
                durations=self.durations,
                sysinfo=self.sysinfo if self.sysinfo is not None else family.facts,
                waives_file=self.waives_file,
                arch=family.arch,
            )
        )

    def selection(self, stages: Iterable[Stage], *, allow_empty: bool = False) -> dict[str, StagePlan]:
        """Catalog stages: stage name -> plan, in the given order (`allow_empty`: a family may render nothing)."""
        plans = plan_stages(
            stages,
            db=self.db,
            durations=self.durations,
            sysinfo=self.sysinfo,
            waives_file=self.waives_file,
            allow_empty=allow_empty,
        )
        return {name: self._ordered(plan) for name, plan in plans.items()}

    def _ordered(self, plan: StagePlan) -> StagePlan:
        """The plan with the tests its processes run first, when this planner orders by likelihood."""
        if self.likelihood is None:
            return plan
        return replace(plan, priority=prioritize(self.likelihood, plan.lines, self.durations))
