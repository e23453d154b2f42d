"""`--today`: the day waive expiries and history windows are measured from. The one place a command reads
the host's date, so tests (and a reviewer replaying a check) pass the day instead."""

from __future__ import annotations

import datetime
import re

import click

_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
# Days the arithmetic on them (a window of --days before, an expiry after) can never take out of range.
FIRST_DAY, LAST_DAY = datetime.date(1970, 1, 1), datetime.date(9000, 12, 31)


class Day(click.ParamType):
    """A day written YYYY-MM-DD."""

    name = "YYYY-MM-DD"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> datetime.date:
        if isinstance(value, datetime.date):
            return value
        text = str(value)
        try:
            day = datetime.date.fromisoformat(text) if _ISO_DAY.fullmatch(text) else None
        except ValueError:
            day = None
        if day is None:
            self.fail(f"expected a real day as YYYY-MM-DD, found {text!r}", param, ctx)
        if not FIRST_DAY <= day <= LAST_DAY:
            self.fail(f"expected a day from {FIRST_DAY} to {LAST_DAY}, found {text!r}", param, ctx)
        return day


today_option = click.option(
    "--today", type=Day(), default=None, help="The day to measure expiries and windows from [default: this machine's]."
)


def resolve_today(given: datetime.date | None) -> datetime.date:
    """`--today`, else the host's date."""
    return given if given is not None else datetime.date.today()


def start_of_day(day: datetime.date) -> float:
    """Seconds since the epoch at 00:00 UTC of `day` (history timestamps are epoch seconds)."""
    return datetime.datetime.combine(day, datetime.time(), tzinfo=datetime.UTC).timestamp()
