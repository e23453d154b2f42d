"""`ci-tool run [BOT_COMMAND]`: the main job. Plan the stages a `/bot run ...` comment selects, run here the
ones this machine serves (CPU stages anywhere, GPU stages on a machine with that GPU), report the others
as waiting for a runner, record everything in the SQLite history, and print the CI report. With
`--executor slurm` every test stage is a Slurm batch job instead, all submitted at once.

Reuse is the default (run/reuse.py): the stages the newest run of the same code and request passed do not
run again, and in the stages it failed, the tests that passed skip. `/bot reuse-pipeline` runs nothing: it
records a run of this code that passes by reuse, when an earlier run of it passed every stage a bare
`/bot run` selects that this machine serves."""

from __future__ import annotations

import sys
from collections.abc import Mapping

import click

from ci_tool import gitinfo
from ci_tool.bot.flags import Arg, flag_by_name
from ci_tool.bot.grammar import parse_comment
from ci_tool.commands.catalog_inputs import echo_errors, pull_request_options
from ci_tool.commands.changes import change_set
from ci_tool.commands.run_options import RunOptions, finish, local_setup, run_options, with_merged_waives
from ci_tool.errors import BotError, RunError
from ci_tool.report.words import run_state_words
from ci_tool.run.pipeline import runner_mismatch
from ci_tool.run.progress import Progress
from ci_tool.run.reuse import ReusePlan, plan_reuse
from ci_tool.run.session import RunIdentity, catalog_stages, run_session
from ci_tool.stages.cbts import CbtsScope
from ci_tool.stages.engines import Engine
from ci_tool.stages.query import QueryValue
from ci_tool.stages.request import SelectionRequest
from ci_tool.stages.select import Selection, select_for_change

RUN_HINT = 'e.g. ci-tool run "/bot run --stage-list CPU-Generic-1"'
REUSE_PIPELINE = "reuse-pipeline"


class _RunCommand(click.Command):
    """`ci-tool run --post-merge` and `ci-tool run '--stage-list "X"'` mean the /bot run flags, not
    unknown options of ci-tool run: bot_flags_as_comment makes them the comment before click parses."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        own = {name for param in self.get_params(ctx) for name in [*param.opts, *param.secondary_opts]}
        return super().parse_args(ctx, bot_flags_as_comment(args, own_options=own))


def bot_flags_as_comment(args: list[str], *, own_options: set[str]) -> list[str]:
    """The arguments with the /bot run flags among them as the BOT_COMMAND argument (after `--`): from the
    first argument whose first word is a /bot flag up to the next option of ci-tool run. The shell has
    taken the double quotes off a list or text value given as its own argument (`--stage-list A,B`): they
    go back on. Arguments after a `--` of the user's are left alone."""
    start = next((i for i, arg in enumerate(args) if arg == "--" or _is_bot_flag(arg, own_options)), None)
    if start is None or args[start] == "--":
        return args
    end = next(
        (i for i in range(start, len(args)) if args[i] == "--" or args[i].split("=")[0] in own_options), len(args)
    )
    words: list[str] = []
    for word in args[start:end]:
        previous = flag_by_name(words[-1]) if words else None
        takes_string = previous is not None and previous.arg in (Arg.LIST, Arg.TEXT)
        quoted = takes_string and not word.startswith('"')
        words.append('"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"' if quoted else word)
    return [*args[:start], *args[end:], "--", " ".join(words)]


def _is_bot_flag(arg: str, own_options: set[str]) -> bool:
    first = arg.split(maxsplit=1)[0] if arg.strip() else ""
    return arg.split("=")[0] not in own_options and flag_by_name(first) is not None


@click.command(cls=_RunCommand)
@click.argument("bot_command", required=False, default="/bot run")
@run_options
@pull_request_options
@click.option(
    "--plan-only", is_flag=True, help="Print the stages the run would start (`+ NAME`, one a line); run nothing."
)
def run(
    bot_command: str,
    changed_files: tuple[str, ...],
    base: str | None,
    head: str | None,
    labels: tuple[str, ...],
    plan_only: bool,
    options: RunOptions,
) -> int:
    """Run the pipeline BOT_COMMAND selects [default: "/bot run"] on this machine; the /bot run flags
    alone work too: ci-tool run --post-merge, ci-tool run --stage-list "CPU-Generic-1". Prints progress,
    the CI report and `N passed, M failed, K skipped`; exits 1 when a stage failed."""
    text = bot_command if bot_command.lstrip().startswith("/bot") else f"/bot run {bot_command}"
    request = parse_comment(text)
    if request.command not in ("run", REUSE_PIPELINE):
        expected = f"a `/bot run` or `/bot {REUSE_PIPELINE}` command"
        raise BotError(f"expected {expected}, found {text.strip()!r}", hint=RUN_HINT)
    revalidate = request.command == REUSE_PIPELINE
    wanted = SelectionRequest() if revalidate else request.selection_request()
    setup = local_setup(options, detailed_log=wanted.detailed_log)
    if base is not None:  # a pull request's run: its waives merged with the target branch's
        setup, merge_note = with_merged_waives(setup, options, base=base)
        click.echo(merge_note)
    code = gitinfo.code_version(setup.config.rootdir)
    reuse = plan_reuse(wanted, code=code, history=setup.config.history, scope=wanted.scope)
    selection = select_for_change(
        setup.loaded,
        wanted,
        engine=Engine.LOCAL,
        changes=change_set(changed_files, base=base, head=head, test_db=options.test_db,
                           history=setup.config.history),
        labels=labels,
        passed_stages=reuse.passed_stages,
    )
    echo_errors(selection.errors)
    if selection.errors:
        return 1
    if selection.narrowing is not None and selection.narrowing.scope is not CbtsScope.OFF:
        click.echo("".join(f"{reason}\n" for reason in selection.narrowing.reasons), nl=False)
    for missing in selection.missing:
        click.echo(f"note: on CI this run would need the label {missing.label!r}", err=True)
    for note in selection.notes:
        click.echo(f"note: {note}", err=True)
    reused = {verdict.stage: reuse.passed_stages[verdict.stage] for verdict in selection.reused}
    if revalidate:
        _check_revalidation(selection, reuse, setup.facts)
    click.echo(reuse.note)
    if plan_only:
        click.echo("".join(f"+ {name}\n" for name in selection.names), nl=False)
        return 0
    chosen = {stage.name.name for stage in selection.selected} | set(reused)
    stages = catalog_stages(
        [stage for stage in selection.candidates if stage.name.name in chosen],  # no label needed here
        db=setup.loaded.db,
        durations=setup.loaded.durations,
        sysinfo=setup.planning_facts,
        waives_file=setup.waives_file,
        reused_tests=reuse.passed_tests,
    )
    result = run_session(
        text.strip(),
        stages,
        config=setup.config,
        fail_fast=selection.fail_fast,
        progress=Progress(sys.stdout),
        identity=RunIdentity(code, wanted.scope, reused),
    )
    click.echo("")
    click.echo(result.report_markdown, nl=False)
    state = run_state_words(result.state, result.pipeline.waiting)
    click.echo(f"\nrun {result.run_id}: {state}; results in {result.results_dir}")
    return finish(result, options)


def _check_revalidation(selection: Selection, reuse: ReusePlan, facts: Mapping[str, QueryValue]) -> None:
    """`/bot reuse-pipeline` runs nothing: every stage of a bare `/bot run` this machine serves must have
    passed in the reused run."""
    if reuse.source is None:
        raise RunError(
            f"expected an earlier run of this code that passed, found none ({reuse.note})",
            hint="`ci-tool run` runs the stages; `/bot reuse-pipeline` only validates code that passed already",
        )
    unproven = [stage.name.name for stage in selection.stages if runner_mismatch(stage.name, facts) is None]
    if unproven:
        raise RunError(
            f"expected run {reuse.source.run.run_id} to have passed every stage this machine serves, found "
            f"{', '.join(unproven)} not passed there",
            hint="`ci-tool run` runs them (and reuses the rest)",
        )
