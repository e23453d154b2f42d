"""`ci-tool flaky report [--days N] [--json]`: measured flakiness per test and GPU type, from the history,
most GPU minutes lost first (ci_tool/history/flakiness.py says what each column counts)."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Sequence
from pathlib import Path

import click

from ci_tool.commands import number_types
from ci_tool.commands.clock import today_option
from ci_tool.commands.flake_options import days_option, read_flake_stats
from ci_tool.commands.history_options import history_option
from ci_tool.history.flakiness import FlakeStats


@click.group()
def flaky() -> None:
    """Measured flakiness of tests, from the recorded history."""


@flaky.command("report")
@history_option
@days_option
@today_option
@click.option("--limit", type=number_types.count(), help="Show the first N tests only.")
@click.option("--json", "as_json", is_flag=True, help='Print {"days": N, "tests": [...]} (rate as a fraction).')
def report_command(
    history_file: Path | None, days: int, today: datetime.date | None, limit: int | None, as_json: bool
) -> int:
    """Per test and GPU type: runs, failures, passes on rerun, flips, flake rate, first and last seen, the
    failure signatures; sorted by GPU minutes lost to reruns and red runs."""
    found = read_flake_stats(history_file, days, today)[:limit]
    if as_json:
        tests = [{**dataclasses.asdict(s), "rate": round(s.rate, 4)} for s in found]
        click.echo(json.dumps({"days": days, "tests": tests}, indent=2))
        return 0
    click.echo(render_text(found, days))
    return 0


def render_text(found: Sequence[FlakeStats], days: int) -> str:
    lines = [f"Flaky tests of the last {days} day{'s' if days != 1 else ''}, most GPU minutes lost first:"]
    if not found:
        return "\n".join([*lines, "  none"])
    header = f"{'lost GPU min':>12}  {'rate':>5}  {'runs':>5}  {'red':>4}  {'rerun':>5}  {'flips':>5}"
    lines.append(f"  {header}  gpu / test")
    for s in found:
        lines.append(
            f"  {s.lost_gpu_minutes:12.2f}  {s.rate:5.0%}  {s.runs:5d}  {s.failures:4d}  {s.passed_on_rerun:5d}  "
            f"{s.flips:5d}  {s.gpu} / {s.test_id}"
        )
        lines.append(f"{'':16}first seen {_day(s.first_seen_at)} ({s.first_seen_run}), last seen "
                     f"{_day(s.last_seen_at)} ({s.last_seen_run})")  # fmt: skip
        lines += [f"{'':16}{c.count} x {c.signature}" for c in s.signatures]
    return "\n".join(lines)


def _day(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
