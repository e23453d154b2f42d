"""`bot handle`: one pull-request comment answered, start to end, each step a module of this package and a
frozen value handed to the next:

    decide     the event and the allowlist -> Decision (bot/event.py: ignore, help, refuse or dispatch)
    read       the clients it needs, the pull request and its change -> Reached (read.py)
    preview    the plan of a /bot run on the head, the decision settled by it -> Preview (preview.py)
    reply      the markdown (bot/reply.py); --reply-file gets a copy, a dry run prints it and stops here
    carry out  on Jenkins, GitHub Actions or both: run, kill, skip, reuse-pipeline (carry_out.py), then
               follow the build to its end and post the CI report and the final status (follow.py)

Nothing here imports PyGithub or python-jenkins: the steps that reach GitHub and Jenkins import them when
a decision needs them, so `bot parse`, `bot plan` and a dry run start fast.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ci_tool.atomic import write_text_atomically
from ci_tool.bot.authorize import authorize, parse_allowlist
from ci_tool.bot.event import Action, Decision, decide, dispatch_payload, read_event
from ci_tool.bot.flags import SubCommand
from ci_tool.bot.reply import render_reply, shorten
from ci_tool.bot.run_plan import RunPlan
from ci_tool.errors import BotError
from ci_tool.json_file import read_json
from ci_tool.pr_bot.preview import CatalogFiles, preview
from ci_tool.pr_bot.read import read_pull_request
from ci_tool.pr_bot.settings import BotSettings, Terminal
from ci_tool.text_file import read_text


@dataclass(frozen=True)
class Comment:
    """The comment to answer: the GitHub issue_comment payload, and the allowlist of who may run besides
    members."""

    event_path: Path
    allowlist_path: Path


@dataclass(frozen=True)
class Outputs:
    """Where the answer goes besides the pull request."""

    dry_run: bool  # print what would be dispatched instead (no network)
    reply_file: Path | None  # a copy of the first reply (none when the bot stays silent)
    github_output: Path | None  # build=N and build_url=URL (Jenkins), run=ID and run_url=URL (GitHub Actions)


def handle_comment(comment: Comment, files: CatalogFiles, settings: BotSettings, outputs: Outputs,
                   terminal: Terminal) -> int:  # fmt: skip
    """Answer one comment (see the module docstring); 1 when GitHub refused a post."""
    event = read_event(read_json(comment.event_path, name="the event", error=BotError), file=str(comment.event_path))
    allowlist_text = read_text(comment.allowlist_path, name="the allowlist", error=BotError)
    allowlist = parse_allowlist(allowlist_text, file=str(comment.allowlist_path))
    reached = read_pull_request(decide(event, allowlist), settings, dry_run=outputs.dry_run, test_db=files.test_db)
    may_skip = authorize(allowlist, command=SubCommand.SKIP, login=event.login, association=event.association)
    previewed = preview(reached, files, settings.history_option, may_skip=may_skip.allowed)
    decision = previewed.decision
    terminal.echo(f"decision: {decision.action.value}: {decision.reason}")
    reply = render_reply(decision, dry_run=outputs.dry_run, plan=previewed.plan)
    if reply is not None and outputs.reply_file is not None:
        write_text_atomically(outputs.reply_file, shorten(reply), what="the reply")  # posted as it is: cut to fit
    if outputs.dry_run:
        _show_dry_run(terminal, decision, previewed.plan, reply if outputs.reply_file is None else None)
        return 0
    if reached.clients.github is None or reply is None or decision.action is Action.IGNORE:
        return 0
    from ci_tool.pr_bot.carry_out import answer  # PyGithub and python-jenkins: only to dispatch

    return answer(previewed, reply, settings, reached.clients, github_output=outputs.github_output, terminal=terminal)


def _show_dry_run(terminal: Terminal, decision: Decision, plan: RunPlan | None, reply: str | None) -> None:
    """What would be dispatched, and the reply (unless it went to --reply-file)."""
    if decision.action is Action.DISPATCH:
        stages = {"stages": list(plan.selection.names)} if plan is not None else {}
        terminal.echo("would dispatch: " + json.dumps({**dispatch_payload(decision), **stages}))
    if reply is not None:
        terminal.write("\n" + reply)
