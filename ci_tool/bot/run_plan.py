"""A `/bot run` request resolved against the catalog: the selection and each selected stage's plan, the value
the reply previews (what it changes about the bot's decision is pr_bot/settle.py's). Pure (the caller loads
the catalog, test-db and durations).

    plan_run(request, ...)      -> RunPlan: the Selection (stages in and out, why, approvals, merge gate)
                                   and a StagePlan per stage to run (shard, tests, predicted minutes)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ci_tool.change.value import ChangeSet
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.engines import Engine
from ci_tool.stages.select import Selection, select_for_change
from ci_tool.stages.selection_request import SelectionRequest
from ci_tool.stages.stage_plan import StagePlan

DISPATCH_ENGINE = Engine.JENKINS  # where the bot's runs go


@dataclass(frozen=True)
class RunPlan:
    selection: Selection
    plans: Mapping[str, StagePlan]  # stage name -> plan, for each selected stage (blocked ones too), in order
    changes: ChangeSet | None = None  # the change it was planned for (None: no changed files were read)
    # the GPU types with a throughput baseline (perf/blind_gate.py); None: not read, and the plan says nothing
    perf_baselined: frozenset[str] | None = None

    @property
    def slowest_seconds(self) -> float:
        """The predicted seconds of the slowest stage to run (stages run in parallel)."""
        return max((self.plans[name].predicted_seconds for name in self.selection.names), default=0.0)

    @property
    def test_lines(self) -> int:
        """The test lines of the stages to run."""
        return sum(len(self.plans[name].lines) for name in self.selection.names)

    def to_json(self) -> dict[str, object]:
        """The `ci-tool bot plan --json` object: the request, each stage to run with its plan, and the
        rest of the selection as `ci-tool stage select --json` prints it."""
        selection = self.selection
        verdicts = {verdict.stage: verdict for verdict in selection.verdicts}
        return {
            "request": selection.request.to_json(),
            **selection.to_json(),
            "stages": [
                {
                    "name": stage.name.name,
                    "platform": stage.platform,
                    "shard": stage.shard,
                    "splits": stage.splits,
                    "tests": len(self.plans[stage.name.name].lines),
                    "predicted_minutes": round(self.plans[stage.name.name].predicted_minutes, 3),
                    "step": verdicts[stage.name.name].step.value,
                    "reason": verdicts[stage.name.name].reason,
                }
                for stage in selection.stages
            ],
        }


def plan_run(
    request: SelectionRequest,
    *,
    loaded: LoadedCatalog,
    engine: Engine = DISPATCH_ENGINE,
    labels: Collection[str] = (),
    passed_stages: Mapping[str, str] | None = None,
    changes: ChangeSet | None = None,
    perf_baselined: Collection[str] | None = None,
) -> RunPlan:
    """Select the request's stages and plan each (stage facts only: the runners' sysinfo is not known).
    `changes` feeds the path-based steps and change-based selection; `perf_baselined`: the GPU types with a
    throughput baseline (perf/blind_gate.py), so that a perf stage whose gate cannot fail on it says so."""
    selection = select_for_change(
        loaded, request, engine=engine, changes=changes, labels=labels, passed_stages=passed_stages
    )
    plans = loaded.planner.selection(selection.selected, allow_empty=True)
    baselined = frozenset(perf_baselined) if perf_baselined is not None else None
    return RunPlan(selection, plans, changes, baselined)
