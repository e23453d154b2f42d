"""`ci-tool run [BOT_COMMAND]`: the main job. Plan the stages a `/bot run ...` comment selects, run here the
ones this machine serves (CPU stages anywhere, GPU stages on a machine with that GPU), report the others
as waiting for a runner, record everything in the SQLite history, and print the CI report. Stages run side
by side as far as this machine holds them (`--jobs`, run/resources.py; `--jobs 1`: one at a time). With
`--executor slurm` every test stage is a Slurm batch job instead, all submitted at once.

Reuse is the default (run/reuse_choice.py): the stages the newest run of the same code and request passed do not
run again, and in the stages it failed, the tests that passed skip. `/bot reuse-pipeline` runs nothing: it
records a run of this code that passes by reuse, when an earlier run of it passed every stage a bare
`/bot run` selects that this machine serves."""

from __future__ import annotations

import os
import sys
from dataclasses import replace

import click

from ci_tool import sysinfo
from ci_tool.bot.flags import Arg, SubCommand, flag_by_name
from ci_tool.bot.grammar import parse_comment
from ci_tool.change.build import GitRange, read_change
from ci_tool.commands import number_types
from ci_tool.commands.catalog_inputs import echo_errors, pull_request_options
from ci_tool.commands.run_options import finish, progress_of, reorder_option, run_options
from ci_tool.errors import BotError
from ci_tool.run.main_run import MainRun, plan_main_run
from ci_tool.run.pipeline import runner_mismatch
from ci_tool.run.resources import HostCapacity, default_jobs, describe, host_capacity, run_stage_cores
from ci_tool.run.reuse_choice import check_revalidation
from ci_tool.run.session import SessionConfig, run_session
from ci_tool.run.setup import LocalSetup, RunOptions, local_setup, ordered_by_likelihood, with_merged_waives
from ci_tool.stages.cbts import CbtsScope
from ci_tool.stages.executors import Executor
from ci_tool.stages.select import Selection
from ci_tool.stages.selection_request import RunMode, SelectionRequest

RUN_HINT = 'e.g. ci-tool run "/bot run --stage-list CPU-Generic-1"'


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
@click.option(
    "--run-mode",
    type=click.Choice([mode.value for mode in RunMode]),
    default=RunMode.FULL.value,
    show_default=True,
    help="Which run this is: a nightly release validation runs the package-sanity stages only, a release "
    "check the non-test stages only (CI's REQUEST carries it as `run_mode`).",
)
@click.option(
    "--jobs",
    type=number_types.count(number_types.MAX_JOBS),
    help="Run up to N stages side by side on this machine (CPU stages beside GPU stages, each GPU stage on "
    "GPUs of its own; a perf stage always alone); 1 runs one stage at a time [default: what this machine "
    "holds: min(cores, available memory / 2 GiB)].",
    metavar="N",
)
@reorder_option
def run(
    bot_command: str,
    base: str | None,
    head: str | None,
    labels: tuple[str, ...],
    plan_only: bool,
    run_mode: str,
    jobs: int | None,
    no_reorder: bool,
    options: RunOptions,
) -> int:
    """Run the pipeline BOT_COMMAND selects [default: "/bot run"] on this machine; the /bot run flags
    alone work too: ci-tool run --post-merge, ci-tool run --stage-list "CPU-Generic-1". Stages run side by
    side as far as the machine holds them (--jobs). Prints progress, the CI report (in the catalog's order)
    and `N passed, M failed, K skipped`; exits 1 when a stage failed."""
    text = bot_command if bot_command.lstrip().startswith("/bot") else f"/bot run {bot_command}"
    request = parse_comment(text)
    if request.command not in (SubCommand.RUN, SubCommand.REUSE_PIPELINE):
        expected = f"a `/bot run` or `/bot {SubCommand.REUSE_PIPELINE}` command"
        raise BotError(f"expected {expected}, found {text.strip()!r}", hint=RUN_HINT)
    revalidate = request.command is SubCommand.REUSE_PIPELINE
    wanted = replace(SelectionRequest() if revalidate else request.selection_request(), run_mode=RunMode(run_mode))
    setup = local_setup(options, detailed_log=wanted.detailed_log)
    if base is not None:  # a pull request's run: its waives merged with the target branch's
        setup, merge_note = with_merged_waives(setup, options, base=base)
        click.echo(merge_note)
    history = setup.config.history
    changes = read_change(GitRange(base, head), test_db=options.test_db, history=history) if base else None
    setup = ordered_by_likelihood(setup, changes, reorder=not no_reorder)
    main = plan_main_run(setup, wanted, changes=changes, labels=labels)
    echo_errors(main.selection.errors)
    if main.selection.errors:
        return 1
    _echo_notes(main.selection)
    if revalidate:
        check_revalidation(main.selection, main.reuse, setup.facts)
    click.echo(main.reuse.note)
    if plan_only:
        click.echo("".join(f"+ {name}\n" for name in main.selection.names), nl=False)
        return 0
    if options.executor is Executor.LOCAL:
        host = host_capacity(setup.facts, cores=sysinfo.usable_cores(), environ=os.environ)
        setup = replace(setup, config=_side_by_side(_jobs(jobs, host), host, main.selection, setup))
    return _run(text.strip(), main, setup, options)


def _side_by_side(jobs: int, host: HostCapacity, selection: Selection, setup: LocalSetup) -> SessionConfig:
    """The session's bound of stages and each parallel stage's test processes (run/resources.py); says the
    latter when a stage runs its tests in more than one."""
    config = setup.config
    names = [stage.name for stage in selection.stages]
    cores = run_stage_cores(
        host, jobs=jobs, stages=names, parallel_families=config.parallel_families,
        runs_here=lambda name: runner_mismatch(name, setup.facts) is None,
    )  # fmt: skip
    config = replace(config, jobs=jobs, stage_cores=cores)
    parallel = [name.name for name in names if config.workers(name) > 1]
    if parallel:
        click.echo(f"{', '.join(parallel)}: their tests in {cores} processes each (parallel_tests)")
    return config


def _jobs(asked: int | None, host: HostCapacity) -> int:
    """How many stages run side by side: `--jobs`, else what this machine holds (run/resources.py); says so."""
    if asked is not None:
        if asked > 1:
            click.echo(f"up to {asked} stages side by side (--jobs {asked})")
        return asked
    jobs = default_jobs(host)
    bound = f"up to {jobs} stages side by side" if jobs > 1 else "one stage at a time"
    click.echo(f"{bound} (this machine holds {jobs}: {describe(host)}; --jobs N to change)")
    return jobs


def _echo_notes(selection: Selection) -> None:
    """What change-based selection made of the change, the labels CI would need, and the selection's notes."""
    if selection.narrowing is not None and selection.narrowing.scope is not CbtsScope.OFF:
        click.echo("".join(f"{reason}\n" for reason in selection.narrowing.reasons), nl=False)
    for missing in selection.missing:
        click.echo(f"note: on CI this run would need the label {missing.label!r}", err=True)
    for note in selection.notes:
        click.echo(f"note: {note}", err=True)


def _run(text: str, main: MainRun, setup: LocalSetup, options: RunOptions) -> int:
    """Run the planned stages, then print the CI report and where the results are."""
    result = run_session(
        text,
        main.stages(setup),
        config=setup.config,
        fail_fast=main.selection.fail_fast,
        progress=progress_of(options, sys.stdout),
        identity=main.identity,
    )
    click.echo("")
    click.echo(result.report_markdown, nl=False)
    state = result.state.words(result.pipeline.waiting)
    click.echo(f"\nrun {result.run_id}: {state}; results in {result.results_dir}")
    return finish(result, options)
