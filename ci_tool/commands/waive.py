"""`ci-tool waive propose|verify`: waives from measured flakiness, and unwaives only once proven.

Both write a unified diff of the waives file to review (stdout, or `--output FILE`, which must not
exist yet) and never edit the waives file themselves: `git apply FILE` applies it once read.
"""

from __future__ import annotations

import datetime
import importlib
from pathlib import Path

import click

from ci_tool.commands import number_types
from ci_tool.commands.clock import Day, resolve_today, today_option
from ci_tool.commands.flake_options import days_option, read_flake_stats
from ci_tool.commands.history_options import history_option
from ci_tool.commands.waive_diff import check_output, output_option, read_waives_text, shown_path, write_diff
from ci_tool.layout import TEST_DB_DIR, waives_file_of
from ci_tool.report.waive_proposals import Proposal, propose_waives
from ci_tool.testdb.waive_edit import unified_diff, with_lines_added
from ci_tool.testdb.waive_terms import LINK_HINT, parse_terms

DEFAULT_MIN_RATE = 0.1
DEFAULT_MIN_RUNS = 5  # a rate over fewer runs is noise: one flaky run is a rate of 100 %
PROPOSED = "the proposed waives"
DEFAULT_EXPIRES_DAYS = 30  # a flaky waive is looked at again within a month


@click.group()
def waive() -> None:
    """Propose waives for flaky tests from the history; verify a waived test before unwaiving it."""


waive.add_command(importlib.import_module("ci_tool.commands.waive_verify").verify_command)


@waive.command("propose")
@history_option
@days_option
@today_option
@click.option(
    "--min-rate",
    default=DEFAULT_MIN_RATE,
    show_default=True,
    type=number_types.FiniteFloatRange(min=0, max=1, min_open=True),
    help="Propose tests whose first attempt failed in at least this share of their runs (0 to 1).",
)
@click.option(
    "--min-runs",
    default=DEFAULT_MIN_RUNS,
    show_default=True,
    type=number_types.count(),
    help="Propose only tests with at least this many runs on the GPU type: a rate over fewer is noise.",
)
@click.option(
    "--waives",
    "waives_path",
    default=waives_file_of(Path(TEST_DB_DIR)),
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The waives file the diff adds to.",
)
@click.option("--issue", metavar="URL", help="The issue link each proposed line carries [default: none, `flaky`].")
@click.option("--expires", type=Day(), help="The last day the waives hold [default: --today + 30 days].")
@output_option
def propose_command(
    history_file: Path | None,
    days: int,
    today: datetime.date | None,
    min_rate: float,
    min_runs: int,
    waives_path: Path,
    issue: str | None,
    expires: datetime.date | None,
    output: Path | None,
) -> int:
    """Write waive lines for the flaky tests at or above --min-rate over at least --min-runs runs, each with
    its measured rate and failure signature, as a diff of the waives file; tests already waived are left out."""
    if issue is not None and parse_terms(issue).issue != issue:
        raise click.BadParameter(
            f"expected a link like https://tracker/issues/123, found {issue!r}", param_hint="'--issue'"
        )
    check_output(output, what=PROPOSED)
    text, waives = read_waives_text(waives_path)
    last_day = expires or resolve_today(today) + datetime.timedelta(days=DEFAULT_EXPIRES_DAYS)
    stats = read_flake_stats(history_file, days, today)
    proposal = propose_waives(stats, waives, min_rate=min_rate, min_runs=min_runs, expires=last_day, issue=issue)
    _say_set_aside(proposal, min_runs=min_runs)
    summary = (
        f"{len(proposal.waives)} waive(s) proposed at a flake rate of at least {min_rate:.0%} over at least "
        f"{min_runs} run(s); {len(proposal.already_waived)} already waived, {proposal.below_rate} flaky below "
        f"the rate, {len(proposal.too_few_runs)} with too few runs"
    )
    if not proposal.waives:
        click.echo(f"nothing to propose: {summary}", err=True)
        return 0
    diff = unified_diff(text, with_lines_added(text or "", [p.line for p in proposal.waives]), shown_path(waives_path))
    write_diff(diff, output, what=PROPOSED)
    if issue is None:
        click.echo(f"note: the lines link no issue; `testdb check --require-links` wants one: {LINK_HINT}", err=True)
    click.echo(summary + (f"; review {output}, then `git apply {output}`" if output else ""), err=True)
    return 0


def _say_set_aside(proposal: Proposal, *, min_runs: int) -> None:
    """The flaky tests at or above the rate that get no line, and why."""
    for found in proposal.already_waived:
        click.echo(f"already waived: {found.test_id} on {found.gpu}, flake rate {found.rate_text()}", err=True)
    for found, why in proposal.unwaivable:
        click.echo(f"warning: cannot waive {found.test_id!r} on {found.gpu} by a line: {why}", err=True)
    for found in proposal.too_few_runs:
        more = min_runs - found.runs
        click.echo(
            f"too few runs: {found.test_id} on {found.gpu}, flake rate {found.rate_text()}: "
            f"{more} more run{'s' if more != 1 else ''} needed (--min-runs {min_runs})",
            err=True,
        )
