"""`ci-tool run [BOT_COMMAND]`: the main job. Plan the stages a `/bot run ...` comment selects, run here the
ones this machine serves (CPU stages anywhere, GPU stages on a machine with that GPU), report the others
as waiting for a runner, record everything in the SQLite history, and print the CI report. With
`--executor slurm` every test stage is a Slurm batch job instead, all submitted at once."""

from __future__ import annotations

import shlex
import sys

import click

from ci_tool.bot.flags import flag_by_name
from ci_tool.bot.grammar import parse_comment
from ci_tool.commands.catalog_inputs import echo_errors, pull_request_options
from ci_tool.commands.run_options import RunOptions, finish, local_setup, run_options
from ci_tool.errors import BotError
from ci_tool.run.progress import Progress
from ci_tool.run.report import run_state_words
from ci_tool.run.session import catalog_stages, run_session
from ci_tool.stages.engines import Engine
from ci_tool.stages.select import select_stages

RUN_HINT = 'e.g. ci-tool run "/bot run --stage-list CPU-Generic-1"'


class _RunCommand(click.Command):
    """`ci-tool run '--stage-list "X"'` reads as an unknown ci-tool option: say how to pass /bot flags."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as error:
            word = error.option_name.split()[0] if error.option_name.split() else error.option_name
            if flag_by_name(word) is None:
                raise
            raise click.UsageError(
                f"{error.format_message().rstrip('.')}: a /bot run flag, not an option of ci-tool run. "
                f"Hint: put the flags after `--`: ci-tool run -- {shlex.quote(error.option_name)}, or write the "
                "whole command: "
                f"ci-tool run {shlex.quote('/bot run ' + error.option_name)}",
                ctx=ctx,
            ) from None


@click.command(cls=_RunCommand)
@click.argument("bot_command", required=False, default="/bot run")
@run_options
@pull_request_options
def run(bot_command: str, changed_files: tuple[str, ...], labels: tuple[str, ...], options: RunOptions) -> int:
    """Run the pipeline BOT_COMMAND selects [default: "/bot run"] on this machine; flags alone also work
    after `--`: ci-tool run -- '--stage-list "CPU-Generic-1"'. Prints progress, the CI report and
    `N passed, M failed, K skipped`; exits 1 when a stage failed."""
    text = bot_command if bot_command.lstrip().startswith("/bot") else f"/bot run {bot_command}"
    request = parse_comment(text)
    if request.command != "run":
        raise BotError(f"expected a `/bot run` command, found {text.strip()!r}", hint=RUN_HINT)
    wanted = request.selection_request()
    setup = local_setup(options, detailed_log=wanted.detailed_log)
    selection = select_stages(
        setup.loaded.catalog, wanted, engine=Engine.LOCAL, changed_files=changed_files, labels=labels
    )
    echo_errors(selection.errors)
    if selection.errors:
        return 1
    for missing in selection.missing:
        click.echo(f"note: on CI this run would need the label {missing.label!r}", err=True)
    for note in selection.notes:
        click.echo(f"note: {note}", err=True)
    stages = catalog_stages(
        selection.selected,  # a local run needs no approval label: the machine is yours
        db=setup.loaded.db,
        durations=setup.loaded.durations,
        sysinfo=setup.planning_facts,
        waives_file=setup.waives_file,
    )
    result = run_session(
        text.strip(), stages, config=setup.config, fail_fast=selection.fail_fast, progress=Progress(sys.stdout)
    )
    click.echo("")
    click.echo(result.report_markdown, nl=False)
    state = run_state_words(result.state, result.pipeline.waiting)
    click.echo(f"\nrun {result.run_id}: {state}; results in {result.results_dir}")
    return finish(result, options)
