"""The bounded number types of the CLI: a number click accepts is one the verb can hold.

An unbounded `click.IntRange(min=1)` lets `--limit 100000000000000000000` through to SQLite (64-bit
integers) and `click.FloatRange` lets `nan` and `inf` through to arithmetic; each bound here is far
above any real use, so a value beyond it is a usage error (exit 2) with click's usual message.
"""

from __future__ import annotations

import math

import click

MAX_COUNT = 1_000_000  # rows a section prints, runs a query reads
MAX_SHARDS = 1_000  # shards of one stage family
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600  # a week for one test
MAX_BUDGET_MINUTES = 7 * 24 * 60  # a week for one shard
MAX_JOBS = 1_024  # stages side by side on one machine


def count(maximum: int = MAX_COUNT) -> click.IntRange:
    """A whole number from 1 to `maximum`."""
    return click.IntRange(min=1, max=maximum)


class FiniteFloatRange(click.FloatRange):
    """A FloatRange with both bounds that also refuses `nan` (which compares false with any bound)."""

    def __init__(self, *, min: float, max: float, min_open: bool = False, max_open: bool = False) -> None:
        super().__init__(min=min, max=max, min_open=min_open, max_open=max_open)

    def convert(self, value: float, param: click.Parameter | None, ctx: click.Context | None) -> float:
        number = super().convert(value, param, ctx)  # click passes the option's text despite the annotation
        if math.isnan(number):
            self.fail(f"{number} is not in the range {self._describe_range()}.", param, ctx)
        return number
