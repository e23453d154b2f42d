"""A `/bot run` request resolved against the catalog: the selection, each selected stage's plan, and what
that changes about the bot's decision. Pure (the caller loads the catalog, test-db and durations).

    plan_run(request, ...)      -> RunPlan: the Selection (stages in and out, why, approvals, merge gate)
                                   and a StagePlan per selected stage (shard, tests, predicted minutes)
    settle(decision, plan)      -> Decision: a dispatch becomes `help` when the request names stages the
                                   catalog lacks (the reply shows each with its caret), or `refuse` when
                                   the selected stages need a label the PR lacks
    request_from_json(data)     -> BotRequest: the dispatcher's payload (`{"command": "run", "flags": {...}}`)
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from ci_tool.bot.event import Action, Decision
from ci_tool.bot.flags import Arg, flag_by_key, flags_of
from ci_tool.bot.request import BotRequest, BotSyntaxError, FlagValue
from ci_tool.errors import BotError, and_more, capped, did_you_mean
from ci_tool.stages.catalog import Catalog
from ci_tool.stages.durations import Durations
from ci_tool.stages.plan import StagePlan, plan_stages
from ci_tool.stages.select import Selection, select_stages
from ci_tool.testdb.model import TestDb


@dataclass(frozen=True)
class RunPlan:
    selection: Selection
    plans: Mapping[str, StagePlan]  # selected stage name -> plan, in selection order

    @property
    def slowest_seconds(self) -> float:
        """The predicted seconds of the slowest selected stage (stages run in parallel)."""
        return max((plan.predicted_seconds for plan in self.plans.values()), default=0.0)

    @property
    def test_lines(self) -> int:
        return sum(len(plan.lines) for plan in self.plans.values())

    def to_json(self) -> dict[str, object]:
        """The `ci-tool bot plan --json` object."""
        selection = self.selection
        verdicts = {verdict.stage: verdict for verdict in selection.verdicts}
        return {
            "request": selection.request.to_json(),
            "stages": [
                {
                    "name": stage.name.name,
                    "platform": stage.platform,
                    "shard": stage.shard,
                    "splits": stage.splits,
                    "tests": len(self.plans[stage.name.name].lines),
                    "predicted_minutes": round(self.plans[stage.name.name].predicted_minutes, 3),
                    "step": verdicts[stage.name.name].step,
                    "reason": verdicts[stage.name.name].reason,
                }
                for stage in selection.stages
            ],
            **selection_json(selection, with_stages=False),
        }


def selection_json(selection: Selection, *, with_stages: bool = True) -> dict[str, object]:
    """The `ci-tool stage select --json` object (what CI reads to know which stages to start)."""
    stages: dict[str, object] = {"stages": list(selection.names)} if with_stages else {}
    return {
        **stages,
        "excluded": [{"stage": v.stage, "step": v.step, "reason": v.reason} for v in selection.excluded],
        "missing_approvals": [{"label": m.label, "reasons": list(m.reasons)} for m in selection.missing],
        "custom_run": selection.custom_run,
        "merge_gate": selection.merge_gate,
        "errors": [str(error) for error in selection.errors],
    }


def plan_run(
    request: BotRequest,
    *,
    catalog: Catalog,
    db: TestDb,
    durations: Durations,
    labels: Collection[str] = (),
    changed_files: Collection[str] = (),
    passed_stages: Collection[str] = (),
) -> RunPlan:
    """Select the request's stages and plan each (stage facts only: the runners' sysinfo is not known)."""
    selection = select_stages(catalog, request, changed_files=changed_files, labels=labels, passed_stages=passed_stages)
    plans = plan_stages(selection.stages, db=db, durations=durations, allow_empty=True)
    return RunPlan(selection, plans)


def settle(decision: Decision, plan: RunPlan) -> Decision:
    """A dispatch decision, reconsidered with the resolved stages (see the module docstring)."""
    if decision.action is not Action.DISPATCH:
        return decision
    selection = plan.selection
    errors = [error for error in selection.errors if isinstance(error, BotSyntaxError)]
    if selection.errors:
        shown, rest = capped([error.col for error in errors])
        columns = " ".join(filter(None, (", ".join(map(str, shown)), and_more(rest, "column"))))
        where = f" at column{'s' if len(errors) > 1 else ''} {columns}" if errors else ""
        reason = f"not in the stage catalog{where}"
        return replace(decision, action=Action.HELP, reason=reason, error=errors[0] if errors else None)
    if selection.missing:
        labels = ", ".join(repr(missing.label) for missing in selection.missing)
        return replace(decision, action=Action.REFUSE, reason=f"missing label {labels}", missing=selection.missing)
    return decision


def request_from_json(data: object, *, source: str = "the request") -> BotRequest:
    """A BotRequest from `{"command": ..., "flags": {...}}` (BotRequest.to_json's shape), validated."""
    if not isinstance(data, dict) or not isinstance(data.get("command"), str):
        raise BotError(f'{source}: expected a JSON object with a "command" string, found {_kind(data)}')
    command, flags = data["command"], data.get("flags", {})
    if not isinstance(flags, dict):
        raise BotError(f'{source}: expected "flags" to be a JSON object, found {_kind(flags)}')
    known = {flag.key: flag for flag in flags_of(command)}
    for key in flags:
        if key not in known:
            hint = did_you_mean(key, known) or f"the flags of /bot {command} are {', '.join(known) or 'none'}"
            raise BotError(f"{source}: expected a flag of /bot {command}, found {key!r}", hint=hint)
    values = tuple((key, _value(source, key, flags[key])) for key in known if key in flags)
    return BotRequest(command=command, values=values)


_JSON_VALUES = {
    Arg.SWITCH: "true",
    Arg.LIST: "a list of strings",
    Arg.OPTIONAL_ID: "true or a pipeline id of digits",
    Arg.TEXT: "a string",
}


def _value(source: str, key: str, value: object) -> FlagValue:
    arg = flag_by_key(key).arg
    if arg is Arg.SWITCH and value is True:
        return True
    if arg is Arg.LIST and isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    if arg is Arg.OPTIONAL_ID and (value is True or (isinstance(value, str) and value.isdigit())):
        return True if value is True else str(value)
    if arg is Arg.TEXT and isinstance(value, str):
        return value
    raise BotError(f"{source}: expected {_JSON_VALUES[arg]} for {key!r}, found {value!r}")


def _kind(value: object) -> str:
    return f"a JSON {type(value).__name__}" if not isinstance(value, dict) else "an object without it"
