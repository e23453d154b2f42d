"""`ci-tool stage run NAME [--shard K] [--dry-run]`: run one stage here, as CI runs it on a runner.

    NAME                   a catalog stage (`CPU-Generic-2`): its shard of its family's render
    NAME --shard K         a family (`CPU-Generic`) and a shard index: the same as `CPU-Generic-K`
    NAME (a family)        the family's whole render as one stage, unsharded

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
Reuse is the default, over every run of the same code in the history (a shared one in CI, CI_TOOL_HISTORY):
a stage that passed does not run again, and the tests that passed in its newest run skip
(`--disable-reuse-test` runs everything).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import click

from ci_tool import gitinfo
from ci_tool.commands import bounds
from ci_tool.commands.catalog_inputs import facts_line
from ci_tool.commands.run_options import (
    LocalSetup,
    RunOptions,
    finish,
    local_setup,
    run_options,
    with_merged_waives,
)
from ci_tool.errors import StageError
from ci_tool.run.executor import ReadyStage
from ci_tool.run.invocation import RunSettings, planned_invocations
from ci_tool.run.pipeline import runner_mismatch
from ci_tool.run.progress import Progress
from ci_tool.run.reuse import plan_stage_reuse
from ci_tool.run.session import PlannedStage, RunIdentity, catalog_stages, run_session
from ci_tool.stages.executors import Executor
from ci_tool.stages.names import StageName
from ci_tool.stages.plan import StagePlan, plan_stage

DRY_RUN_ID = "<run-id>"


@click.command("run")
@click.argument("name")
@click.option("--shard", type=bounds.count(bounds.MAX_SHARDS), help="With a family NAME: run its stage NAME-K.")
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
@run_options
def run_command(
    name: str,
    shard: int | None,
    dry_run: bool,
    detailed_log: bool,
    output_dir: Path | None,
    base: str | None,
    disable_reuse_test: bool,
    options: RunOptions,
) -> int:
    """Run stage NAME on this machine (or as a Slurm job): render, waive, shard, pytest; JUnit, logs, history."""
    setup = local_setup(options, detailed_log=detailed_log, output_dir=output_dir)
    if dry_run and options.system_info is None:  # show the runner's view, not this machine's
        setup = replace(setup, stage_name_facts=True)
    if base is not None:  # a pull request's stage: its waives merged with the target branch's
        setup, merge_note = with_merged_waives(setup, options, base=base)
        click.echo(merge_note)
    stage = _resolve(name, shard, setup)
    mismatch = runner_mismatch(stage.name, setup.facts) if options.executor is Executor.LOCAL else None
    if mismatch is not None:
        click.echo(
            f"warning: this machine is not a runner for {stage.name.name} ({mismatch}); running anyway", err=True
        )
    if dry_run:
        click.echo(_dry_run(stage, setup, output_dir, system_info=options.system_info), nl=False)
        return 0
    code = gitinfo.code_version(setup.config.rootdir)
    reuse = plan_stage_reuse(stage.name.name, code=code, history=setup.config.history, disabled=disable_reuse_test)
    click.echo(reuse.note)
    if reuse.reuse.tests is not None:
        stage = replace(stage, reused_tests=reuse.reuse.tests)
    passed_in = reuse.reuse.passed_in
    result = run_session(
        f"ci-tool stage run {stage.name.name}",
        [stage],
        config=setup.config,
        fail_fast=True,
        progress=Progress(sys.stdout),
        identity=RunIdentity(
            code, f"stage {stage.name.name}", reused_stages={stage.name.name: passed_in} if passed_in else {}
        ),
    )
    for stage_result in result.results:
        click.echo(f"{stage_result.stage}: {stage_result.state}; JUnit in {stage_result.files_dir / 'junit.xml'}")
    click.echo(f"run {result.run_id}: `ci-tool report {result.run_id}` shows the CI report")
    return finish(result, options)


def _resolve(name: str, shard: int | None, setup: LocalSetup) -> PlannedStage:
    """The stage NAME (and --shard) means: a catalog stage, or a family's whole render."""
    catalog = setup.loaded.catalog
    family = next((f for f in catalog.families if f.name.name == name), None)
    if family is None:
        found = catalog.stage(name)  # a StageError with the closest names when NAME is neither
        if shard is not None and shard != found.shard:
            raise click.UsageError(f"{name} is shard {found.shard}; drop --shard {shard}, or name the family")
        stages = [found]
    elif shard is not None:
        stages = [catalog.stage(f"{name}-{shard}")]
    elif not family.name.is_test:  # a docs or package-sanity stage: its one stage is its family
        stages = list(catalog.stages_of(family))
    else:
        return PlannedStage(
            family.name,
            lambda: _whole_family(family.name, family.context, family.arch, setup),
            family.platform,
            family.timeout_minutes,
        )
    planned = catalog_stages(
        stages,
        db=setup.loaded.db,
        durations=setup.loaded.durations,
        sysinfo=setup.planning_facts,
        waives_file=setup.waives_file,
    )
    return planned[0]


def _whole_family(family: StageName, context: str, arch: str, setup: LocalSetup) -> StagePlan:
    if not family.is_test:
        raise StageError(f"expected a test stage to run, found {family.name!r} ({family.kind.value})")
    return plan_stage(
        family,
        db=setup.loaded.db,
        context=context,
        splits=1,
        durations=setup.loaded.durations,
        sysinfo=setup.planning_facts,
        waives_file=setup.waives_file,
        arch=arch,
    )


def _dry_run(stage: PlannedStage, setup: LocalSetup, output_dir: Path | None, *, system_info: Path | None) -> str:
    """The query, the lists each process reads and the exact commands with the variables the stage adds to
    their environment, as the run would start them (and, for Slurm, the sbatch command)."""
    config = setup.config
    plan = stage.plan()
    slurm = config.executor is Executor.SLURM
    settings = RunSettings(
        rootdir=config.rootdir,
        results_dir=output_dir or config.results_root / DRY_RUN_ID / plan.name.name,
        run_id=DRY_RUN_ID,
        test_timeout_seconds=config.test_timeout_seconds,
        detailed_log=config.detailed_log,
        nodes=plan.name.node_count if slurm else 1,
    )
    shard = f"shard {plan.shard} of {plan.shards}" if plan.shard is not None else "not sharded"
    lines = [
        f"stage {plan.name.name}: context {plan.context}, {shard}, {len(plan.lines)} of {len(plan.rendered)} "
        f"rendered lines, {len(plan.isolated)} isolated",
        f"query: {json.dumps(dict(plan.query), sort_keys=True)}",
        f"waives: {plan.waives_file or 'none'}",
    ]
    if plan.name.policy.runs_alone:
        lines.append(
            f"host: runs alone ({plan.name.mode.value} mode: no other stage shares it"
            + ("; the Slurm job is --exclusive)" if slurm else "; this runner runs one stage at a time)")
        )
    if slurm:
        from ci_tool.run.slurm_executor import job_files, job_request  # the local path never imports Slurm's

        ready = ReadyStage(plan, settings, stage.platform, stage.timeout_minutes)
        request = job_request(ready, job_files(settings), run_id=DRY_RUN_ID, partition=config.slurm_partition)
        lines.append(f"slurm job: {shlex.join(request.sbatch_args())}")
    lines.append(facts_line(system_info, slurm=slurm))
    for invocation in planned_invocations(plan, settings):
        lines.append(f"\n# {invocation.label}: {invocation.list_file}")
        lines += ["  " + line.raw for line in invocation.batch.lines]
        lines.append(shell_line(invocation.variables, invocation.command(settings.python)))
    return "\n".join(lines) + "\n"


def shell_line(variables: Mapping[str, str], command: list[str]) -> str:
    """`VAR=value ... command`, quoted for a POSIX shell."""
    return " ".join([*(f"{key}={shlex.quote(value)}" for key, value in variables.items()), shlex.join(command)])
