"""`ci-tool waive verify TEST... [--runs N]`: run waived tests N times with their waive lifted (this machine,
or `--executor slurm`), record every run, and propose the unwaive (a diff deleting the waive lines) only
for the tests that passed all N; ci_tool/run/verify.py says how."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ci_tool.commands import number_types
from ci_tool.commands.run_options import progress_of, run_options
from ci_tool.commands.waive_diff import check_output, output_option, read_waives_text, shown_path, write_diff
from ci_tool.errors import CiToolError
from ci_tool.run.session import PlannedStage
from ci_tool.run.setup import RunOptions, local_setup
from ci_tool.run.stage_runner import StageResult
from ci_tool.run.verify import FixVerdict, verify_runs, waives_of
from ci_tool.run.verify_choice import choose_family, lifted_waives
from ci_tool.testdb.waive_edit import unified_diff, with_lines_removed

DEFAULT_RUNS = 5
UNWAIVE = "the proposed unwaive"


@click.command("verify")
@click.argument("test_ids", metavar="TEST...", nargs=-1, required=True)
@click.option(
    "--runs", default=DEFAULT_RUNS, show_default=True, type=number_types.count(1000), help="Runs each must pass."
)
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
    family, plan = choose_family(setup, test_ids, waives, family_name)
    lifting = lifted_waives(test_ids, waives, family)
    progress = progress_of(options, sys.stderr)
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
