"""A `/bot run` request resolved against the catalog: the selection, each selected stage's plan, and what
that changes about the bot's decision. Pure (the caller loads the catalog, test-db and durations).

    plan_run(request, ...)      -> RunPlan: the Selection (stages in and out, why, approvals, merge gate)
                                   and a StagePlan per stage to run (shard, tests, predicted minutes)
    settle(decision, plan)      -> Decision: a dispatch becomes `help` when the request names stages the
                                   catalog lacks or options the engine cannot honour (the reply shows each
                                   with its caret), or `refuse` when the request itself asks for stages
                                   that need a label the PR lacks, or when every stage it selects does; a
                                   stage only the change adds (a multi-GPU path) is blocked, as the
                                   pipelines block it, and the others run
    without_change(decision, error) -> Decision: GitHub could not give the pull request's change; a request
                                   that selects by it (a bare or --post-merge /bot run, reuse-pipeline)
                                   is refused saying what failed, any other goes on without it
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from ci_tool.bot.event import Action, Decision
from ci_tool.bot.flags import SubCommand
from ci_tool.errors import ColumnError, DispatchError, and_more, capped
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.changes import ChangeSet
from ci_tool.stages.engines import Engine
from ci_tool.stages.plan import StagePlan
from ci_tool.stages.request import SelectionRequest
from ci_tool.stages.select import Selection, select_for_change

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


def without_change(decision: Decision, error: DispatchError) -> Decision:
    """A dispatch decision when GitHub could not give the pull request's change (see the module docstring)."""
    request = decision.request
    if decision.action is not Action.DISPATCH or request is None:
        return decision
    if request.command is SubCommand.RUN and request.selection_request().narrowing_off is not None:
        return replace(decision, unread=error)  # its selection does not narrow by the change: CI reads git
    return replace(decision, action=Action.REFUSE, reason="could not read the pull request's change", unread=error)


def settle(decision: Decision, plan: RunPlan) -> Decision:
    """A dispatch decision, reconsidered with the resolved stages (see the module docstring)."""
    if decision.action is not Action.DISPATCH:
        return decision
    selection = plan.selection
    located = [error for error in selection.errors if isinstance(error, ColumnError)]
    if selection.errors:
        shown, rest = capped([error.col for error in located])
        columns = " ".join(filter(None, (", ".join(map(str, shown)), and_more(rest, "column"))))
        where = f" at column{'s' if len(located) > 1 else ''} {columns}" if located else ""
        what = (
            f"not honoured by the {selection.engine.value} engine" if selection.refused else "not in the stage catalog"
        )
        return replace(decision, action=Action.HELP, reason=what + where, error=located[0] if located else None)
    if selection.asked_blocked or (selection.blocked and not selection.stages):
        labels = ", ".join(repr(missing.label) for missing in selection.missing)
        return replace(decision, action=Action.REFUSE, reason=f"missing label {labels}", missing=selection.missing)
    return decision
