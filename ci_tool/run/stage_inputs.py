"""What a stage runs with, as one digest: what reuse matches besides the code (history/reuse_sources.py).

    the catalog entry   the stage's name (its shard), platform, context, shard count, mode options, perf gate
    the list            the test-db's render of its context for the stage name's facts
    the waives          the waives file's text (merged with the target branch's for a pull request)

The render is taken for the stage name's facts only, as CI knows them before a runner starts: the plan job's
selection and the stage's own run compute the same digest, whatever machine each runs on. A stage that passed
with another test-db, catalog or waives (`stage run X --test-db D`) spares the real stage nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import replace

from ci_tool.errors import CiToolError, RunError
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.planner import Planner
from ci_tool.stages.stage_plan import StagePlan
from ci_tool.text_file import read_text


def inputs_digest(plan: StagePlan, *, platform: str) -> str:
    """The digest of a stage's inputs (see the module docstring)."""
    waives = read_text(plan.waives_file, name="the waives file", error=RunError) if plan.waives_file else ""
    inputs = {
        "name": plan.name.name,
        "platform": platform,
        "context": plan.context,
        "query": dict(plan.query),
        "shard": plan.shard,
        "shards": plan.shards,
        "pytest_args": list(plan.pytest_args),
        "perf_gate": plan.perf_gate.value,
        "rendered": [line.raw for line in plan.rendered],
        "waives": waives,
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def declared_digest(plan: Callable[[], StagePlan], platform: str) -> str:
    """The digest of the plan `plan` makes; '' when the stage cannot be planned (nothing matches it: a stage
    that cannot be planned reuses nothing, and its run says why)."""
    try:
        return inputs_digest(plan(), platform=platform)
    except CiToolError:
        return ""


def lazy_digest(plan: Callable[[], StagePlan], platform: str) -> Callable[[], str]:
    """`declared_digest` of `plan`, planned the first time it is asked for (a stage that never needs it, one
    that waits for a runner, is never planned for it)."""
    return functools.cache(functools.partial(declared_digest, plan, platform))


def declared_planner(planner: Planner) -> Planner:
    """`planner` rendering for the stage name's facts only, in list order: how every digest is planned."""
    return replace(planner, sysinfo=None, likelihood=None)


def catalog_inputs(loaded: LoadedCatalog, waives_file: str | None) -> Callable[[str], str]:
    """A catalog stage's name -> the digest of its inputs with `waives_file` ('' for a name the catalog does not
    have), as catalog_stages' PlannedStage.inputs gives them."""
    catalog = loaded.catalog
    declared = declared_planner(replace(loaded.planner, waives_file=waives_file))

    @functools.cache
    def inputs_of(name: str) -> str:
        try:
            stage = catalog.stage(name)
        except CiToolError:
            return ""
        return declared_digest(functools.partial(declared.stage, stage), stage.platform)

    return inputs_of
