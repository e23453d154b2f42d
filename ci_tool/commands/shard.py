"""`ci-tool shard`: split any test list into duration-balanced shards."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ci_tool.commands import number_types
from ci_tool.errors import ShardError, Where, shown
from ci_tool.stages.durations import load_durations
from ci_tool.stages.shard import ALGORITHMS, DEFAULT_ALGORITHM, AutoSplits, ShardPlan, Splits, plan_shards
from ci_tool.testdb.lines import TestLine, parse_test_line, strip_comment
from ci_tool.text_file import lines, read_text


class SplitsType(click.ParamType):
    """A whole number of shards from 1 to MAX_SHARDS, or `auto`."""

    name = "N|auto"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> Splits:
        text = str(value).strip()
        if text == AutoSplits.AUTO.value:  # the command line's word
            return AutoSplits.AUTO
        if not (text.isascii() and text.isdigit() and text.strip("0")):  # '²' is a digit too, yet int('²') fails
            self.fail(f"expected a positive whole number or 'auto', found {shown(text)}", param, ctx)
        if len(text) > len(str(number_types.MAX_SHARDS)):  # too long for any count we take: say so without int()
            number = text if len(text) <= 60 else shown(text)  # digits as click shows a number, or cut short
            self.fail(f"{number} is not in the range 1<=x<={number_types.MAX_SHARDS}.", param, ctx)
        return number_types.count(number_types.MAX_SHARDS).convert(text, param, ctx)  # type: ignore[arg-type]  # text, as click


@click.command()
@click.argument("list_file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--durations",
    "durations_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="pytest-split .test_durations JSON (test id -> seconds).",
)
@click.option("--splits", required=True, type=SplitsType(), help="Number of shards, or auto (needs --budget-minutes).")
@click.option(
    "--budget-minutes",
    type=number_types.FiniteFloatRange(min=0, max=number_types.MAX_BUDGET_MINUTES, min_open=True),
    help="With --splits auto: the most predicted time any shard may take.",
)
@click.option(
    "--algorithm",
    type=click.Choice(list(ALGORITHMS)),
    default=DEFAULT_ALGORITHM,
    show_default=True,
    help="How to balance the shards.",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"shards": [[id, ...], ...], "predicted_seconds": [...]}.')
def shard(
    list_file: Path,
    durations_file: Path,
    splits: Splits,
    budget_minutes: float | None,
    algorithm: str,
    as_json: bool,
) -> int:
    """Split a test list into duration-balanced shards.

    LIST_FILE holds one test line per line (markers such as ISOLATION allowed, `#` comments skipped).
    """
    if splits is AutoSplits.AUTO and budget_minutes is None:
        raise click.UsageError("--splits auto needs --budget-minutes")
    if splits is not AutoSplits.AUTO and budget_minutes is not None:
        raise click.UsageError("--budget-minutes goes with --splits auto")
    lines = read_test_list(list_file)
    plan = plan_shards(
        [line.test_id for line in lines],
        load_durations(durations_file),
        splits=splits,
        budget_seconds=None if budget_minutes is None else budget_minutes * 60,
        algorithm=algorithm,
        isolated=[line.test_id for line in lines if line.isolation],
    )
    click.echo(json.dumps(plan.to_json(), indent=2) if as_json else describe(plan))
    return 0


def read_test_list(path: Path) -> list[TestLine]:
    """The test lines of a list file; blank and comment-only lines are skipped."""
    text = read_text(path, name="the test list", error=ShardError)
    return [
        parse_test_line(raw, Where(str(path), number))
        for number, raw in enumerate(lines(text), start=1)
        if strip_comment(raw).strip()
    ]


def describe(plan: ShardPlan) -> str:
    """The plan for people: each shard's tests, isolated ones marked, and the predicted times."""
    out: list[str] = []
    total = len(plan.shards)
    for shard_ in plan.shards:
        isolated = set(shard_.isolated_ids)
        note = f", {len(isolated)} isolated" if isolated else ""
        count = len(shard_.test_ids)
        tests = f"{count} test{'s' if count != 1 else ''}"
        out.append(f"shard {shard_.index}/{total}: {tests}{note}, {shard_.predicted_seconds:.1f} s")
        out.extend(f"  {test_id}{'  ISOLATION' if test_id in isolated else ''}" for test_id in shard_.test_ids)
    out.append(
        f"{plan.algorithm}: makespan {plan.makespan_seconds:.1f} s, lower bound {plan.lower_bound_seconds:.1f} s"
    )
    return "\n".join(out)
