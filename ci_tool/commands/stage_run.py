"""`ci-tool stage run NAME [--shard K] [--dry-run]`: run one stage here, as CI runs it on a runner.

    NAME                   a catalog stage (`CPU-Generic-2`): its shard of its family's render
    NAME --shard K         a family (`CPU-Generic`) and a shard index: the same as `CPU-Generic-K`
    NAME (a family)        the family's whole render as one stage, unsharded
    NAME-cbts --selection F  a stage narrowed by change-based selection (`CPU-Generic-2-cbts`): the filter
                           and shard count the run record F (`ci-tool stage select --json`) holds for its
                           family, as the pipelines' stage jobs run it; never narrowed again here

The list is rendered for the stage's query merged over this machine's sysinfo (a --dry-run: over the
stage name's facts only, what CI knows before a runner starts, unless --system-info is given; it prints
which), waived tests skip with
their reason, and pytest runs through ci-tool's plugin; the stage's folder (`--output-dir`, else
`.ci-tool/runs/<run id>/<stage>/`) gets junit.xml, the lists, logs and result.json, and with `--output-dir` the
run's report.md too (nothing goes under `.ci-tool/runs/` then); the history records it.
With `--executor slurm` the stage is one Slurm batch job (slurm_executor.py), rendered with stage-name keys
only, and its folder gets the job's files under slurm/; the Jenkins L0_Test runs Slurm families this way.
With `--base REF` (a pull request's stage, as the generated pipelines run it) the waives are the pull
request's merged with the tip of REF's (`ci-tool testdb merge-waives`), as `ci-tool run --base` runs them.
The tests likeliest to fail run first (stages/priority.py): those that failed recently in the history, then,
with `--base`, those whose touch records ran a file the change changes; `--no-reorder` keeps the list's order.
Reuse is the default, over every run of the same code in the history (a shared one in CI, CI_TOOL_HISTORY)
with the same inputs (the stage's list, waives and catalog entry: run/stage_inputs.py): a stage that passed
does not run again, and the tests that passed in its newest run skip (`--disable-reuse-test` runs everything).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click

from ci_tool import gitinfo
from ci_tool.change.build import GitRange, read_change
from ci_tool.commands import number_types
from ci_tool.commands.catalog_inputs import facts_line
from ci_tool.commands.run_options import finish, progress_of, reorder_option, run_options
from ci_tool.run.dry_run import dry_run_text
from ci_tool.run.pipeline import runner_mismatch
from ci_tool.run.reuse_choice import plan_reuse
from ci_tool.run.session import PlannedStage, RunIdentity, run_session
from ci_tool.run.setup import LocalSetup, RunOptions, local_setup, ordered_by_likelihood, with_merged_waives
from ci_tool.run.stage_pick import is_narrowed, resolve_stage
from ci_tool.stages.executors import Executor, pool_of


@click.command("run")
@click.argument("name")
@click.option(
    "--shard", type=number_types.count(number_types.MAX_SHARDS), help="With a family NAME: run its stage NAME-K."
)
@click.option("--dry-run", is_flag=True, help="Print the lists and the exact pytest commands; run nothing.")
@click.option("--detailed-log", is_flag=True, help="Stream all pytest output (`pytest -s`), as `--detailed-log` asks.")
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The stage's results folder, and the run's (its report.md): nothing goes under RESULTS_DIR then "
    "[default: RESULTS_DIR/<run id>/<stage>].",
)
@click.option(
    "--base",
    metavar="REF",
    help="The branch (or commit) a pull request targets: its waives are merged in, as CI runs the stage.",
)
@click.option(
    "--disable-reuse-test",
    is_flag=True,
    help="Run the stage and every test, even when they passed on this code before (reuse is the default).",
)
@click.option(
    "--selection",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The run record of the plan (`ci-tool stage select --json`): a -cbts NAME runs the narrowing it holds.",
)
@reorder_option
@run_options
def run_command(
    name: str,
    shard: int | None,
    dry_run: bool,
    detailed_log: bool,
    output_dir: Path | None,
    base: str | None,
    disable_reuse_test: bool,
    selection: Path | None,
    no_reorder: bool,
    options: RunOptions,
) -> int:
    """Run stage NAME on this machine (or as a Slurm job): render, waive, shard, pytest; JUnit, logs, history."""
    setup = local_setup(options, detailed_log=detailed_log, output_dir=output_dir)
    if dry_run and options.system_info is None:  # show the runner's view, not this machine's
        setup = replace(setup, stage_name_facts=True)
    if base is not None:  # a pull request's stage: its waives merged with the target branch's
        setup, merge_note = with_merged_waives(setup, options, base=base)
        click.echo(merge_note)
    changes = read_change(GitRange(base), test_db=options.test_db, history=setup.config.history) if base else None
    setup = ordered_by_likelihood(setup, changes, reorder=not no_reorder)
    _check_shard(name, shard, setup)
    stage = resolve_stage(name, shard, setup, selection=selection)
    mismatch = runner_mismatch(stage.name, setup.facts) if options.executor is Executor.LOCAL else None
    if mismatch is not None:
        click.echo(
            f"warning: this machine is not a runner for {stage.name.name} ({mismatch}); running anyway", err=True
        )
    if dry_run:
        has_facts = pool_of(stage.platform) in setup.loaded.catalog.platforms
        slurm = options.executor is Executor.SLURM
        facts = facts_line(options.system_info, platform=stage.platform, platform_facts=has_facts, slurm=slurm)
        click.echo(dry_run_text(stage, setup, output_dir, facts=facts), nl=False)
        return 0
    return _run(stage, setup, options, disable_reuse_test=disable_reuse_test)


def _run(stage: PlannedStage, setup: LocalSetup, options: RunOptions, *, disable_reuse_test: bool) -> int:
    """Run the stage, reusing what passed on this code (see the module docstring), and say where its JUnit is."""
    code = gitinfo.code_version(setup.config.rootdir)
    inputs = stage.inputs()
    reuse = plan_reuse(  # over every run of this code: each stage of CI is a run of its own (scope `stage NAME`)
        setup.config.history,
        code=code,
        scope=None,
        inputs_of=lambda _name: inputs,
        disabled=disable_reuse_test,
        stage=stage.name.name,
    )
    click.echo(reuse.note)
    tests = reuse.passed_tests.get(stage.name.name)
    if tests is not None:
        stage = replace(stage, reused_tests=tests)
    passed_in = reuse.passed_stages.get(stage.name.name)
    result = run_session(
        f"ci-tool stage run {stage.name.name}",
        [stage],
        config=setup.config,
        fail_fast=True,
        progress=progress_of(options, sys.stdout),
        identity=RunIdentity(
            code, f"stage {stage.name.name}", reused_stages={stage.name.name: passed_in} if passed_in else {}
        ),
    )
    for stage_result in result.results:
        click.echo(f"{stage_result.stage}: {stage_result.state}; JUnit in {stage_result.files_dir / 'junit.xml'}")
    click.echo(f"run {result.run_id}: `ci-tool report {result.run_id}` shows the CI report")
    return finish(result, options)


def _check_shard(name: str, shard: int | None, setup: LocalSetup) -> None:
    """A --shard with a stage NAME must be that stage's shard (a usage error otherwise)."""
    catalog = setup.loaded.catalog
    if shard is None or any(f.name.name == name for f in catalog.families):
        return
    if is_narrowed(name):
        raise click.UsageError(f"{name} names its shard; drop --shard {shard}")
    found = catalog.stage(name)  # a StageError with the closest names when NAME is neither
    if shard != found.shard:
        raise click.UsageError(f"{name} is shard {found.shard}; drop --shard {shard}, or name the family")
