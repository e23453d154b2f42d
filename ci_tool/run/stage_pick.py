"""What `ci-tool stage run NAME [--shard K]` runs: a catalog stage, the stage K of a family, a family's
whole render as one unsharded stage, or a later attempt of a catalog stage (`A10-PyTorch-1-attempt-2`: the
pipelines run a stage again under that name after the infrastructure lost its agent or runner)."""

from __future__ import annotations

import functools
import re
from dataclasses import replace

from ci_tool.run import stage_inputs
from ci_tool.run.session import PlannedStage, catalog_stages
from ci_tool.run.setup import LocalSetup
from ci_tool.stages.names import ATTEMPT_SUFFIX, StageName, parse_stage_name
from ci_tool.stages.plan import StagePlan

_ATTEMPT_TAIL = re.compile(re.escape(ATTEMPT_SUFFIX) + r"\d+$")


def resolve_stage(name: str, shard: int | None, setup: LocalSetup) -> PlannedStage:
    """The stage NAME (and --shard) means: a catalog stage, or a family's whole render (the command has
    checked that a --shard with a stage NAME is that stage's)."""
    if _ATTEMPT_TAIL.search(name):
        return _attempt(parse_stage_name(name), shard, setup)
    catalog = setup.loaded.catalog
    family = next((f for f in catalog.families if f.name.name == name), None)
    if family is None:
        stages = [catalog.stage(name)]  # a StageError with the closest names when NAME is neither
    elif shard is not None:
        stages = [catalog.stage(f"{name}-{shard}")]
    elif not family.name.is_test:  # a docs or package-sanity stage: its one stage is its family
        stages = list(catalog.stages_of(family))
    else:
        declared = functools.partial(stage_inputs.declared_planner(setup.planner).family, family)
        return PlannedStage(
            family.name,
            functools.partial(setup.planner.family, family),
            family.platform,
            family.timeout_minutes,
            inputs=stage_inputs.lazy_digest(declared, family.platform),
        )
    planned = catalog_stages(stages, planner=setup.planner)
    return planned[0]


def _attempt(name: StageName, shard: int | None, setup: LocalSetup) -> PlannedStage:
    """The catalog stage `name` is an attempt of, planned as it, run and recorded under the attempt's name
    (its JUnit, results and history say which attempt ran; stage_runner makes its pass unstable)."""
    first = resolve_stage(name.first_attempt, shard, setup)

    def plan() -> StagePlan:
        return replace(first.plan(), name=name)

    return replace(first, name=name, plan=plan)
