"""`ci-tool waive verify TEST... [--runs N]`: run waived tests N times with their waive lifted (this machine,
or `--executor slurm`), record every run, and propose the unwaive (a diff deleting the waive lines) only
for the tests that passed all N; ci_tool/run/verify.py says how."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import click

from ci_tool.commands import bounds
from ci_tool.commands.run_options import LocalSetup, RunOptions, local_setup, run_options
from ci_tool.commands.waive_diff import check_output, output_option, read_waives_text, shown_path, write_diff
from ci_tool.errors import CiToolError, RunError, did_you_mean
from ci_tool.run.pipeline import runner_mismatch
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage
from ci_tool.run.stage_runner import StageResult
from ci_tool.run.verify import FixVerdict, lifted, verify_lines, verify_runs, waives_of
from ci_tool.stages.catalog import Family
from ci_tool.stages.executors import Executor
from ci_tool.stages.plan import StagePlan, plan_stage
from ci_tool.testdb.check import covers
from ci_tool.testdb.waive_edit import unified_diff, with_lines_removed
from ci_tool.testdb.waives import Waive

DEFAULT_RUNS = 5
UNWAIVE = "the proposed unwaive"


@click.command("verify")
@click.argument("test_ids", metavar="TEST...", nargs=-1, required=True)
@click.option("--runs", default=DEFAULT_RUNS, show_default=True, type=bounds.count(1000), help="Runs each must pass.")
@click.option("--stage", "family_name", metavar="FAMILY", help="The catalog family to run them in [default: the "
              "first whose render lists them and that the executor can run].")  # fmt: skip
@output_option
@run_options
def verify_command(
    test_ids: tuple[str, ...], runs: int, family_name: str | None, output: Path | None, options: RunOptions
) -> int:
    """Run the waived TESTs --runs times with their waive lifted (first attempts only: reruns are off) and
    write the diff deleting their waive lines for those that passed every run. Exit 1 when any did not."""
    check_output(output, what=UNWAIVE)
    setup = local_setup(options)
    if setup.waives_file is None:
        raise CiToolError("expected a waives file to verify against, found none", hint="pass --waives FILE")
    waives_path = Path(setup.waives_file)
    text, waives = read_waives_text(waives_path)
    for test_id in test_ids:
        waives_of(test_id, waives)  # an id no waive names: an error before anything runs
    family, plan = _choose(setup, test_ids, waives, family_name)
    line_ids = Counter(w.where.line for w in waives if w.where.line is not None)
    lifting = {test_id: lifted(test_id, waives, family.name.gpu, line_ids=line_ids) for test_id in test_ids}
    for test_id, lines in lifting.items():
        if not lines:
            raise RunError(
                f"expected a waive of {test_id!r} that holds on {family.name.name}, found only waives for "
                + ", ".join(sorted({w.gpu or "every GPU" for w in waives_of(test_id, waives)})),
                hint="pass --stage with a family of the waive's GPU type",
            )
    progress = Progress(sys.stderr)
    stage = PlannedStage(family.name, lambda: plan, family.platform, family.timeout_minutes)

    def on_run(run_id: str, number: int, result: StageResult | None) -> None:
        state = result.state if result is not None else "not run"
        click.echo(f"verify run {number} of {runs}: {run_id}: {state}", err=True)

    found = verify_runs(plan, stage, test_ids, runs=runs, config=setup.config, progress=progress, on_run=on_run)
    proven = [v for v in found if v.proven]
    for verdict in found:
        click.echo(verdict_line(verdict), err=True)
    if proven:
        gone = [w.where.line for v in proven for w in lifting[v.test_id] if w.where.line is not None]
        diff = unified_diff(text, with_lines_removed(text or "", gone), shown_path(waives_path))
        write_diff(diff, output, what=UNWAIVE)
    return 0 if len(proven) == len(found) else 1


def verdict_line(verdict: FixVerdict) -> str:
    """`ID: passed 3 of 3 runs: unwaive proposed`, or why not."""
    passed = f"{verdict.test_id}: passed {verdict.passed} of {verdict.runs_asked} runs"
    if verdict.proven:
        return f"{passed}: unwaive proposed"
    ran = f" ({verdict.runs} ran)" if verdict.runs != verdict.runs_asked else ""
    failure = (
        f"; first failure in run {verdict.first_failed_run}: {verdict.first_failure}" if verdict.first_failure else ""
    )
    return f"{passed}{ran}{failure}: refusing the unwaive, the waive stays"


def _choose(
    setup: LocalSetup, test_ids: tuple[str, ...], waives: list[Waive], family_name: str | None
) -> tuple[Family, StagePlan]:
    """The family to run the tests in and its plan narrowed to them (see the command's --stage)."""
    families = [f for f in setup.loaded.catalog.families if f.name.is_test]
    if family_name is not None:
        named = [f for f in families if f.name.name == family_name]
        if not named:
            raise RunError(
                f"expected a test family of the catalog for --stage, found {family_name!r}",
                hint=did_you_mean(family_name, [f.name.name for f in families]) or "`ci-tool stages list` names them",
            )
        families = named
    listing: list[tuple[Family, StagePlan]] = []
    for family in families:
        if not all(any(w.applies_to(family.name.gpu) for w in waives_of(t, waives)) for t in test_ids):
            continue
        try:
            plan = _plan(setup, family)
        except CiToolError:  # a family whose context renders nothing here lists no test
            continue
        if all(any(covers(line.test_id, t) for line in plan.rendered) for t in test_ids):
            listing.append((family, plan))
    if not listing:
        raise RunError(
            f"expected a catalog family whose render lists {', '.join(test_ids)}, found none",
            hint="pass --stage FAMILY, or check the ids with `ci-tool testdb render`",
        )
    for family, plan in listing:
        if setup.config.executor is not Executor.LOCAL or runner_mismatch(family.name, setup.facts) is None:
            return family, verify_lines(plan, test_ids)
    family = listing[0][0]
    raise RunError(
        f"expected a family this machine can run, found only {', '.join(f.name.name for f, _ in listing)} "
        f"({runner_mismatch(family.name, setup.facts)})",
        hint="run it on a runner of that GPU type, or pass --executor slurm",
    )


def _plan(setup: LocalSetup, family: Family) -> StagePlan:
    return plan_stage(
        family.name,
        db=setup.loaded.db,
        context=family.context,
        splits=1,
        durations=setup.loaded.durations,
        sysinfo=setup.planning_facts,
        arch=family.arch,
    )
