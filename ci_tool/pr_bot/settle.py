"""What the bot read and planned changes about its decision on a comment. Pure.

without_change(decision, error) -> Decision: GitHub could not give the pull request's change; a request
                               that selects by it (a bare or --post-merge /bot run, reuse-pipeline)
                               is refused saying what failed, any other goes on without it
settle(decision, plan)      -> Decision: a dispatch becomes `help` when the request names stages the
                               catalog lacks or options the engine cannot honour (the reply shows each
                               with its caret), or `refuse` when the request itself asks for stages
                               that need a label the PR lacks, or when every stage it selects does; a
                               stage only the change adds (a multi-GPU path) is blocked, as the
                               pipelines block it, and the others run
"""

from __future__ import annotations

from dataclasses import replace

from ci_tool.bot.event import Action, Decision
from ci_tool.bot.flags import SubCommand
from ci_tool.bot.run_plan import RunPlan
from ci_tool.errors import ColumnError, DispatchError, and_more, capped


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
