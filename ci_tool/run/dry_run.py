"""`ci-tool stage run --dry-run`: what a stage's run would start, as text: the query, the order its tests run
in, the lists each process reads, and the exact commands with the variables the stage adds to their
environment (and, for Slurm, the sbatch command)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path

from ci_tool.run.executor import ReadyStage
from ci_tool.run.invocation import planned_invocations
from ci_tool.run.jobs import planned_checks
from ci_tool.run.session import PlannedStage
from ci_tool.run.setup import LocalSetup
from ci_tool.stages.executors import Executor
from ci_tool.stages.stage_plan import StagePlan

DRY_RUN_ID = "<run-id>"


def dry_run_text(stage: PlannedStage, setup: LocalSetup, output_dir: Path | None, *, facts: str) -> str:
    """The stage's dry run; `facts` says which facts it rendered with."""
    config = setup.config
    plan = stage.plan()
    slurm = config.executor is Executor.SLURM
    results_dir = output_dir or config.results_root / DRY_RUN_ID / plan.name.name
    settings = config.stage_settings(plan.name, results_dir=results_dir, run_id=DRY_RUN_ID, preview=True)
    lines = _header(plan, slurm=slurm)
    if slurm:
        from ci_tool.run.slurm_executor import job_files, job_request  # the local path never imports Slurm's

        ready = ReadyStage(plan, settings, stage.platform, stage.timeout_minutes)
        request = job_request(ready, job_files(settings), run_id=DRY_RUN_ID, partition=config.slurm_partition)
        lines.append(f"slurm job: {shlex.join(request.sbatch_args())}")
    lines += [facts, plan.priority.summary]
    checks = planned_checks(plan, settings)
    if checks:
        lines.append(f"\n# what {plan.name.name} checks, one result each:")
        lines += ["  " + check for check in checks]
    for invocation in planned_invocations(plan, settings):
        lines.append(f"\n# {invocation.label}: {invocation.list_file}")
        lines += ["  " + line.raw for line in invocation.batch.lines]
        lines.append(shell_line(invocation.variables, invocation.command(settings.python)))
    return "\n".join(lines) + "\n"


def _header(plan: StagePlan, *, slurm: bool) -> list[str]:
    """The stage, its query and waives, and whether it runs alone on its host."""
    shard = f"shard {plan.shard} of {plan.shards}" if plan.shard is not None else "not sharded"
    if plan.context:
        lists = f"context {plan.context}, {shard}, {len(plan.lines)} of {len(plan.rendered)} rendered lines, "
        lists += f"{len(plan.isolated)} isolated"
    else:
        lists = "no test list: its checks below are what it runs"
    lines = [
        f"stage {plan.name.name}: {lists}",
        f"query: {json.dumps(dict(plan.query), sort_keys=True)}",
        f"waives: {plan.waives_file or 'none'}",
    ]
    if plan.name.policy.runs_alone:
        lines.append(
            f"host: runs alone ({plan.name.mode.value} mode: no other stage shares it"
            + ("; the Slurm job is --exclusive)" if slurm else "; this runner runs one stage at a time)")
        )
    return lines


def shell_line(variables: Mapping[str, str], command: list[str]) -> str:
    """`VAR=value ... command`, quoted for a POSIX shell."""
    return " ".join([*(f"{key}={shlex.quote(value)}" for key, value in variables.items()), shlex.join(command)])
