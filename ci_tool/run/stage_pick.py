"""What `ci-tool stage run NAME [--shard K] [--selection FILE]` runs: a catalog stage, the stage K of a family,
a family's whole render as one unsharded stage, a `<family>-<K>-cbts` stage of a run record's selection
(the narrowing its plan made: stages/record.py), or a later attempt of any of these
(`A10-PyTorch-1-attempt-2`: the pipelines run a stage again under that name after the infrastructure lost
its agent or runner)."""

from __future__ import annotations

import functools
import re
from dataclasses import replace
from pathlib import Path

from ci_tool import gitinfo
from ci_tool.errors import StageError, Where
from ci_tool.json_file import read_json
from ci_tool.run import stage_inputs
from ci_tool.run.session import PlannedStage, catalog_stages
from ci_tool.run.setup import LocalSetup
from ci_tool.stages.names import ATTEMPT_SUFFIX, CBTS_SUFFIX, StageName, parse_stage_name
from ci_tool.stages.record import narrowed_stage, read_record
from ci_tool.stages.stage_plan import StagePlan

_ATTEMPT_TAIL = re.compile(re.escape(ATTEMPT_SUFFIX) + r"\d+$")

SELECTION_HINT = (
    "pass the run record of the plan that selected it: `ci-tool stage select --request R --base REF --json "
    "> selection.json`, then `--selection selection.json` (the generated pipelines pass theirs)"
)


def is_narrowed(name: str) -> bool:
    """Whether NAME is a `-cbts` stage, which runs only from a run record (see the module docstring)."""
    return name.removesuffix(CBTS_SUFFIX) != name and parse_stage_name(name).cbts


def resolve_stage(name: str, shard: int | None, setup: LocalSetup, *, selection: Path | None = None) -> PlannedStage:
    """The stage NAME (and --shard) means: a catalog stage, a family's whole render, or the `-cbts` stage of
    the run record `selection`, or a later attempt of one (the command has checked that a --shard with a stage
    NAME is that stage's)."""
    if _ATTEMPT_TAIL.search(name):
        return _attempt(parse_stage_name(name), shard, setup, selection)
    catalog = setup.loaded.catalog
    if is_narrowed(name):
        return _narrowed(name, setup, selection)
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


def _narrowed(name: str, setup: LocalSetup, selection: Path | None) -> PlannedStage:
    """A `-cbts` stage as the record's plan narrowed it, planned as `ci-tool run` plans it (catalog_stages):
    the same list, shard, inputs digest and reports."""
    if selection is None:
        raise StageError(
            f"{name}: expected --selection FILE with a -cbts stage, found none: it runs the list its plan's "
            "change-based selection narrowed",
            hint=SELECTION_HINT,
        )
    source = str(selection)
    record = read_record(read_json(selection, name="the selection", error=StageError), source=source)
    head = gitinfo.commit_of(setup.config.rootdir)
    if record.head is not None and head is not None and record.head != head:
        raise StageError(
            f"expected the commit this checkout tests, {head}, found {record.head}",
            where=Where(source, yaml_path="head"),
            hint="run the stage on the commit its plan selected on, or select again on this one",
        )
    stage = narrowed_stage(record, setup.loaded.catalog, parse_stage_name(name), source=source)
    return catalog_stages([stage], planner=setup.planner)[0]


def _attempt(name: StageName, shard: int | None, setup: LocalSetup, selection: Path | None) -> PlannedStage:
    """The stage `name` is an attempt of, planned as it, run and recorded under the attempt's name (its
    JUnit, results and history say which attempt ran; stage_runner makes its pass unstable)."""
    first = resolve_stage(name.first_attempt, shard, setup, selection=selection)

    def plan() -> StagePlan:
        return replace(first.plan(), name=name)

    return replace(first, name=name, plan=plan)
