"""`--days N`: the window of days, ending with `--today`, whose runs `flaky report` and `waive propose` measure
flakiness over, and the flake stats of that window they both read."""

from __future__ import annotations

import datetime
from pathlib import Path

import click

from ci_tool.commands import number_types
from ci_tool.commands.clock import resolve_today, start_of_day
from ci_tool.history.flakiness import FLAKE_WINDOW_DAYS, FlakeStats, flake_stats
from ci_tool.history.store import HistoryStore, history_path

days_option = click.option(
    "--days",
    default=FLAKE_WINDOW_DAYS,
    show_default=True,
    type=number_types.count(100_000),
    help="Read the runs of the N days that end with --today.",
)


def window(days: int, today: datetime.date | None) -> tuple[float, float]:
    """[since, before) in epoch seconds: the `days` days (UTC) that end with `today`."""
    last = resolve_today(today)
    return start_of_day(last - datetime.timedelta(days=days - 1)), start_of_day(last + datetime.timedelta(days=1))


def read_flake_stats(history_file: Path | None, days: int, today: datetime.date | None) -> list[FlakeStats]:
    since, before = window(days, today)
    with HistoryStore(history_path(history_file), read_only=True) as store:
        return flake_stats(store, since=since, before=before)
