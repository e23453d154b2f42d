"""`ci-tool bot parse|plan|help|handle`: check a `/bot` comment's syntax; resolve it against the stage
catalog (stages, shards, predicted minutes, stages left out and why, approvals, merge gate); print the
help; answer a webhook event (bot/lifecycle/ carries a dispatch out on Jenkins and GitHub).
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ci_tool.atomic import write_text_atomically
from ci_tool.bot.authorize import authorize, parse_allowlist
from ci_tool.bot.engines import skip_contexts
from ci_tool.bot.event import Action, Decision, decide, dispatch_payload, read_event
from ci_tool.bot.flags import JENKINS_COMMANDS, PLANNED_COMMANDS, PR_COMMANDS, SubCommand, flag_by_key
from ci_tool.bot.grammar import parse_comment
from ci_tool.bot.head_plan import HeadInputs, plan_at_head
from ci_tool.bot.help import render_help
from ci_tool.bot.lifecycle.answer import Answer
from ci_tool.bot.plan import RunPlan, plan_run, settle, without_change
from ci_tool.bot.reply import render_plan, render_reply, shorten
from ci_tool.bot.request import BotRequest
from ci_tool.commands import bot_labels
from ci_tool.commands.catalog_inputs import catalog_options, load, pull_request_options
from ci_tool.commands.dispatch_options import DispatchSettings, dispatch_options
from ci_tool.commands.history import history_option
from ci_tool.dispatch.model import IssueState
from ci_tool.errors import BotError, DispatchError
from ci_tool.gitinfo import CodeVersion
from ci_tool.history.store import history_path
from ci_tool.json_file import read_json
from ci_tool.layout import ALLOWLIST_PATH
from ci_tool.perf.baselines import BASELINE_DIR
from ci_tool.perf.blind_gate import throughput_baselined
from ci_tool.run.changes import change_set, repository_path, with_pull_request_touches
from ci_tool.stages.changes import ChangeSet
from ci_tool.stages.engines import Engine
from ci_tool.text_file import read_text

if TYPE_CHECKING:  # PyGithub and python-jenkins: only when dispatching
    from ci_tool.dispatch.github import GitHubClient
    from ci_tool.dispatch.jenkins import JenkinsClient
    from ci_tool.dispatch.model import PullRequest


@click.group()
def bot() -> None:
    """Parse and answer `/bot` pull-request comments."""


class CommentCommand(click.Command):
    """A command whose COMMENT argument is text even when it starts with `-` (`-->/bot run`): the first word
    that is not one of the command's own options (or an option's value) is the comment, as after `--`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = {
            name: not (param.is_flag or param.count)
            for param in self.get_params(ctx)
            if isinstance(param, click.Option)
            for name in (*param.opts, *param.secondary_opts)
        }
        index = 0
        while index < len(args) and args[index] != "--":
            word = args[index]
            name = word.split("=", 1)[0]
            if word.startswith("-") and word != "-" and name not in takes_value:
                args = [*args[:index], *args[index + 1 :], "--", word]  # the options after it are still options
                break
            index += 2 if takes_value.get(name) and "=" not in word else 1
        return super().parse_args(ctx, args)


bot.add_command(bot_labels.labels)


@bot.command("parse", cls=CommentCommand)
@click.argument("comment")
@click.option("--json", "as_json", is_flag=True, help='Print {"command": ..., "flags": {...}} as JSON.')
def parse(comment: str, as_json: bool) -> None:
    """Check the syntax of COMMENT (`-` reads it from stdin); exit 1 with the column on an error. COMMENT is
    text even when it starts with `-` (`'-->/bot run'`); `--` ends the options."""
    request = parse_comment(sys.stdin.read() if comment == "-" else comment)
    click.echo(json.dumps(request.to_json()) if as_json else _describe(request))


def _describe(request: BotRequest) -> str:
    if request.command is None:
        return "ignore: not a /bot comment"
    lines = [
        request.command
        if request.unknown_command is None
        else f"help (unknown sub-command {request.unknown_command!r})"
    ]
    for key, value in request.values:
        shown = "" if value is True else ", ".join(value) if isinstance(value, tuple) else value
        lines.append(f"  {flag_by_key(key).name} {shown}".rstrip())
    if request.is_custom_run:
        lines.append("custom run: cannot set the merge gate green")
    if request.prose:
        lines.append(f"ignored remark: {request.prose!r}")
    return "\n".join(lines)


@bot.command("plan", cls=CommentCommand)
@click.argument("comment")
@catalog_options
@pull_request_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as one JSON object.")
@history_option
def plan(
    comment: str,
    catalog_path: Path,
    test_db: Path,
    durations_path: Path | None,
    changed_files: tuple[str, ...],
    base: str | None,
    head: str | None,
    labels: tuple[str, ...],
    as_json: bool,
    history_file: Path | None,
) -> int:
    """Show what COMMENT (`-`: stdin) would run: the parsed request, the stages with shards and predicted
    minutes, the stages left out and why, missing approvals, and whether it can turn the merge gate green.
    Exit 1 when it names stages the catalog does not have."""
    request = parse_comment(sys.stdin.read() if comment == "-" else comment)
    if request.command is not SubCommand.RUN:
        click.echo(_describe(request))
        click.echo(f"no stages: /bot {request.command} runs none")
        return 0
    loaded = load(catalog_path, test_db, durations_path)
    run_plan = plan_run(
        request.selection_request(),
        loaded=loaded,
        labels=labels,
        changes=change_set(changed_files, base=base, head=head, test_db=test_db, history=history_path(history_file)),
        perf_baselined=throughput_baselined(BASELINE_DIR),
    )
    if as_json:
        click.echo(json.dumps(run_plan.to_json(), indent=2))
    else:
        click.echo(_describe(request) + "\n")
        click.echo(render_plan(run_plan), nl=False)
    return 1 if run_plan.selection.errors else 0


@bot.command("help")
def help_() -> None:
    """Print the markdown the bot posts for `/bot help`."""
    click.echo(render_help(), nl=False)


@bot.command("handle")
@click.option(
    "--event",
    "event_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The GitHub issue_comment payload (in Actions: $GITHUB_EVENT_PATH).",
)
@click.option(
    "--allowlist",
    "allowlist_path",
    default=ALLOWLIST_PATH,
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Who may run besides members.",
)
@click.option("--dry-run", is_flag=True, help="Print what would be dispatched instead of dispatching (no network).")
@click.option(
    "--reply-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the first markdown reply here (nothing is written when the bot stays silent).",
)
@click.option(
    "--github-output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append build=N and build_url=URL here when a /bot run has a Jenkins build, run=ID and run_url=URL "
    "when it has a GitHub Actions run ($GITHUB_OUTPUT).",
)
@catalog_options
@dispatch_options
def handle(
    event_path: Path,
    allowlist_path: Path,
    dry_run: bool,
    reply_file: Path | None,
    github_output: Path | None,
    catalog_path: Path,
    test_db: Path,
    durations_path: Path | None,
    settings: DispatchSettings,
) -> int:
    """Decide what to do about one PR comment (ignore, help, refuse or dispatch) and do it: replies and
    statuses through GitHub, builds through Jenkins. A `/bot run` is resolved against the stage catalog with
    the pull request's labels and its change read from GitHub (its files, and the test-db and waives at the
    merge base and the head), as `ci-tool stage select --base` reads it from git: unknown stage names get
    help, approvals are checked. The reply is a preview; the build selects again on the PR's commit."""
    event = read_event(read_json(event_path, name="the event", error=BotError), file=str(event_path))
    allowlist_text = read_text(allowlist_path, name="the allowlist", error=BotError)
    allowlist = parse_allowlist(allowlist_text, file=str(allowlist_path))
    reached = _reach(decide(event, allowlist), settings, dry_run=dry_run, test_db=test_db)
    decision, request = reached.decision, reached.decision.request
    pr = reached.pr
    labels = pr.labels if pr is not None else event.labels
    head = HeadInputs(catalog_path, test_db, durations_path, settings.history_option, reached.changes, labels,
                      CodeVersion(pr.head_sha) if pr is not None else None)  # fmt: skip
    plan_for = functools.partial(plan_at_head, head)
    run_plan: RunPlan | None = None
    if reached.command is SubCommand.RUN and request is not None:
        run_plan = plan_for(request.selection_request())
        decision = settle(decision, run_plan)
    click.echo(f"decision: {decision.action.value}: {decision.reason}")
    reply = render_reply(decision, dry_run=dry_run, plan=run_plan)
    if reply is not None and reply_file is not None:
        write_text_atomically(reply_file, shorten(reply), what="the reply")  # posted as it is: cut to fit
    if dry_run:
        return _show_dry_run(decision, run_plan, reply if reply_file is None else None)
    if reached.github is None or reply is None or decision.action is Action.IGNORE:
        return 0
    may_skip = authorize(allowlist, command_name="skip", login=event.login, association=event.association).allowed
    answer = Answer(decision, reply, reached.pr, run_plan, plan_for, may_skip=may_skip)
    return _carry_out(answer, reached.github, reached.jenkins, settings, github_output)


@dataclass(frozen=True)
class _Reached:
    """A decision with what handling it read: the clients it needs, the pull request, and its change."""

    decision: Decision
    command: str | None  # the dispatched sub-command (None: nothing is dispatched)
    github: GitHubClient | None = None
    jenkins: JenkinsClient | None = None
    pr: PullRequest | None = None
    changes: ChangeSet | None = None


def _reach(decision: Decision, settings: DispatchSettings, *, dry_run: bool, test_db: Path) -> _Reached:
    """The clients a decision needs (none for a dry run), the pull request (a closed one: ignored) and the
    change it makes, read from GitHub for the commands that plan stages."""
    event, request = decision.event, decision.request
    command = request.command if decision.action is Action.DISPATCH and request is not None else None
    on_jenkins = command in JENKINS_COMMANDS and Engine.JENKINS in settings.engines
    jenkins = settings.jenkins() if on_jenkins and not dry_run else None  # configured? (no request)
    github = None if dry_run or decision.action is Action.IGNORE else settings.github()
    pr = github.pull_request(event.repository, event.number) if github and command in PR_COMMANDS else None
    if pr is not None and pr.state is not IssueState.OPEN:  # closed since the event was sent
        decision = replace(decision, action=Action.IGNORE, reason=f"pull request #{pr.number} is {pr.state}")
        command = None
    changes: ChangeSet | None = None
    if github is not None and pr is not None and command in PLANNED_COMMANDS:
        from ci_tool.dispatch.pull_change import from_github  # PyGithub: only when GitHub is asked

        try:
            changes = from_github(github, pr.repository, pr.number, test_db_dir=repository_path(test_db, Path.cwd()))
        except DispatchError as error:  # the reply says what failed; a request that need not read it goes on
            decision = without_change(decision, error)
            command = command if decision.action is Action.DISPATCH else None
        else:
            changes = with_pull_request_touches(changes, history_path(settings.history_option), Path.cwd())
    return _Reached(decision, command, github, jenkins, pr, changes)


def _show_dry_run(decision: Decision, run_plan: RunPlan | None, reply: str | None) -> int:
    """What would be dispatched, and the reply (unless it went to --reply-file)."""
    if decision.action is Action.DISPATCH:
        stages = {"stages": list(run_plan.selection.names)} if run_plan is not None else {}
        click.echo("would dispatch: " + json.dumps({**dispatch_payload(decision), **stages}))
    if reply is not None:
        click.echo("\n" + reply, nl=False)
    return 0


def _carry_out(
    answer: Answer,
    github: GitHubClient,
    jenkins: JenkinsClient | None,
    settings: DispatchSettings,
    github_output: Path | None,
) -> int:
    from ci_tool.bot.lifecycle.carry_out import carry_out  # PyGithub and python-jenkins: only to dispatch
    from ci_tool.bot.lifecycle.on_actions import ActionsReach
    from ci_tool.bot.lifecycle.services import JenkinsReach, Replies
    from ci_tool.dispatch.actions import ActionsClient

    event = answer.decision.event
    replies = Replies(github, event.repository, event.number, echo=click.echo, err=_echo_err)
    reach = None
    if jenkins is not None:
        reach = JenkinsReach(jenkins, settings.jenkins_job, settings.history, settings.pace(), settings.report_url,
                             settings.wait)  # fmt: skip
    actions = None
    if Engine.GITHUB in settings.engines:
        actions = ActionsReach(ActionsClient(github), settings.history, settings.pace(), settings.report_url,
                               settings.wait)  # fmt: skip
    return carry_out(answer, replies, reach, github_output=github_output, actions=actions,
                     skip_contexts=skip_contexts(settings.engines))  # fmt: skip


def _echo_err(text: str) -> None:
    click.echo(text, err=True)
