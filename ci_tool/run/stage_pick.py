"""What `ci-tool stage run NAME [--shard K]` runs: a catalog stage, the stage K of a family, or a family's
whole render as one unsharded stage."""

from __future__ import annotations

import functools

from ci_tool.run import stage_inputs
from ci_tool.run.session import PlannedStage, catalog_stages
from ci_tool.run.setup import LocalSetup


def resolve_stage(name: str, shard: int | None, setup: LocalSetup) -> PlannedStage:
    """The stage NAME (and --shard) means: a catalog stage, or a family's whole render (the command has
    checked that a --shard with a stage NAME is that stage's)."""
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
