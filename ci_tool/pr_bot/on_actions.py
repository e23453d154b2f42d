"""A dispatch carried out on GitHub Actions: /bot run (actions_run.py), kill and reuse-pipeline
(actions_steps.py), with the history open and the default branch read, whose workflow file runs."""

from __future__ import annotations

from pathlib import Path

from ci_tool.atomic import append_text
from ci_tool.bot.flags import SubCommand
from ci_tool.bot.reply import could_not_reach
from ci_tool.errors import DispatchError
from ci_tool.pr_bot import actions_run, actions_steps
from ci_tool.pr_bot.actions_services import ActionsReach, ActionsServices
from ci_tool.pr_bot.preview import Preview
from ci_tool.pr_bot.services import Replies

__all__ = ["ActionsReach", "on_actions"]


def on_actions(reach: ActionsReach, replies: Replies, preview: Preview, reply: str, *,
               github_output: Path | None) -> None:  # fmt: skip
    """/bot run, kill or reuse-pipeline on GitHub Actions."""
    decision, pr, request = preview.decision, preview.pr, preview.decision.request
    assert request is not None  # a dispatch's
    command = request.command
    try:
        ref = reach.client.default_branch(replies.repository)
    except DispatchError as error:  # the commenter hears it
        if command is not SubCommand.RUN:
            replies.comment(could_not_reach(reply, f"/bot {command}", error, service="GitHub"))
        raise
    with reach.history() as history:
        services = ActionsServices(reach.client, replies, history, reach.pace, ref, reach.report_url)
        if command is SubCommand.RUN and preview.plan is not None and pr is not None:
            started = actions_run.run(services, decision, preview.plan, pr, reply, wait=reach.wait)
            if github_output is not None and started.build is not None:
                outputs = f"run={started.build.number}\nrun_url={started.build.url}\n"
                append_text(github_output, outputs, what="the GitHub outputs")
        elif command in (SubCommand.KILL, SubCommand.REUSE_PIPELINE):
            try:
                if command is SubCommand.KILL:
                    actions_steps.kill(services, decision.event.number, reply)
                elif pr is not None:
                    actions_steps.reuse(services, pr, reply, preview.head, may_skip=preview.may_skip)
            except DispatchError as error:
                replies.comment(could_not_reach(reply, f"/bot {command}", error, service="GitHub"))
                raise
