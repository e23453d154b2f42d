"""`ci-tool bot parse|plan|help|handle`: check a `/bot` comment's syntax; resolve it against the stage
catalog (stages, shards, predicted minutes, stages left out and why, approvals, merge gate); print the
help; answer a webhook event. The options and the clients are this module's; what a comment sets going is
the application's (pr_bot/), the comment language bot/'s.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import click

from ci_tool.bot.flags import SubCommand, flag_by_key
from ci_tool.bot.grammar import parse_comment
from ci_tool.bot.help import render_help
from ci_tool.bot.parsed_comment import BotRequest
from ci_tool.bot.reply import render_plan
from ci_tool.commands import bot_labels
from ci_tool.commands.catalog_inputs import catalog_options, pull_request_options
from ci_tool.commands.dispatch_options import DispatchSettings, dispatch_options
from ci_tool.commands.history_options import history_option
from ci_tool.layout import ALLOWLIST_PATH
from ci_tool.pr_bot.handle import Comment, Outputs, handle_comment
from ci_tool.pr_bot.preview import CatalogFiles, LocalChange, plan_comment
from ci_tool.pr_bot.settings import Terminal


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
    files = CatalogFiles(catalog_path, test_db, durations_path)
    change = LocalChange(base, head, labels)
    run_plan = plan_comment(request.selection_request(), files, change, history_file)
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
    return handle_comment(
        Comment(event_path, allowlist_path),
        CatalogFiles(catalog_path, test_db, durations_path),
        settings,
        Outputs(dry_run, reply_file, github_output),
        Terminal(functools.partial(click.echo, nl=False), _echo_err),
    )


def _echo_err(text: str) -> None:
    click.echo(text, err=True)
