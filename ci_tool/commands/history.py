"""`ci-tool history`: recent runs, the slowest tests and the flaky tests, from the SQLite history;
`ci-tool history import RUN_DIR`: record a run whose history could not take it (its unrecorded.json)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path

import click

from ci_tool.commands import number_types
from ci_tool.commands.history_options import history_option
from ci_tool.errors import HistoryError
from ci_tool.history import overview, queries
from ci_tool.history.locator import History, PostgresUrl
from ci_tool.history.overview import RunSummary
from ci_tool.history.queries import FlakyTest, SlowTest
from ci_tool.history.store import HistoryStore, history_path
from ci_tool.history.unrecorded import UNRECORDED, load_unrecorded
from ci_tool.outcomes import StageState


@click.group(invoke_without_command=True)
@history_option
@click.option("--limit", default=10, show_default=True, type=number_types.count(), help="Rows per section.")
@click.option("--window", default=30, show_default=True, type=number_types.count(), help="Runs the test sections read.")
@click.option("--json", "as_json", is_flag=True, help='Print {"runs": [...], "slowest": [...], "flaky": [...]}.')
@click.pass_context
def history(ctx: click.Context, history_file: Path | None, limit: int, window: int, as_json: bool) -> int:
    """Show recent runs, the slowest tests and the flaky tests (passed on rerun, or flipping between runs)."""
    if ctx.invoked_subcommand is not None:
        return 0
    path = history_path(history_file)
    _sweep(path)
    with HistoryStore(path, read_only=True) as store:
        runs = overview.run_summaries(store, limit=limit)
        slowest = queries.slowest_tests(store, limit=limit, window_runs=window)
        flaky = queries.flaky_tests(store, window_runs=window)[:limit]
    if as_json:
        payload = {
            "runs": [
                {
                    **{k: getattr(r.run, k) for k in ("run_id", "state", "command", "started_at", "finished_at")},
                    "state_words": r.run.state.words(r.waiting),
                }
                for r in runs
            ],
            "slowest": [dataclasses.asdict(s) for s in slowest],
            "flaky": [dataclasses.asdict(f) for f in flaky],
        }
        click.echo(json.dumps(payload, indent=2))
        return 0
    click.echo(_text(runs, slowest, flaky, window=window), nl=False)
    return 0


def _text(runs: Sequence[RunSummary], slowest: Sequence[SlowTest], flaky: Sequence[FlakyTest], *, window: int) -> str:
    """The recent runs, the slowest tests and the flaky tests, for people."""
    lines = ["Recent runs (newest first):"]
    for summary in runs:
        run = summary.run
        took = f"{run.finished_at - run.started_at:8.1f} s" if run.finished_at is not None else "   running"
        lines.append(f"  {run.run_id}  {run.state.words(summary.waiting):<11} {took}  {run.command}")
    lines.append(f"Slowest tests (median of the latest results, last {window} runs):")
    lines += [f"  {slow.median_seconds:8.2f} s  {slow.test_id}" for slow in slowest]
    lines.append(f"Flaky tests (last {window} runs):")
    for test in flaky:
        lines.append(
            f"  {test.test_id}  [{test.family}]  {test.flips} flips, {test.passed_on_rerun} passed on rerun, "
            f"{test.results} results"
        )
    if not flaky:
        lines.append("  none")
    return "\n".join(lines) + "\n"


def _sweep(path: History) -> None:
    """Close the runs whose ci-tool died (owners.py) before listing, where this history may be written:
    every write open sweeps. Whatever stops it (a file that is not a history, a lock, a read-only role on
    the database) the read below reports."""
    writable_file = isinstance(path, Path) and path.is_file() and os.access(path, os.W_OK)
    if isinstance(path, PostgresUrl) or (writable_file and os.access(path.parent, os.W_OK)):
        with contextlib.suppress(HistoryError):
            HistoryStore(path, create=False, busy_timeout_ms=SWEEP_BUSY_TIMEOUT_MS).close()


SWEEP_BUSY_TIMEOUT_MS = 1_000  # a listing does not wait long for a lock only to sweep


@history.command("import")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@history_option
@click.option(
    "--if-kept",
    is_flag=True,
    help="A run whose history took it whole kept nothing: say so and exit 0 (the pipelines' step after a stage).",
)
@click.pass_context
def import_command(ctx: click.Context, run_dir: Path, history_file: Path | None, if_kept: bool) -> int:
    """Record the run in RUN_DIR that its history could not take (RUN_DIR/unrecorded.json, which the run
    wrote); recording it again replaces it, so importing twice is harmless."""
    kept = run_dir / UNRECORDED
    if if_kept and not kept.exists():
        click.echo(f"nothing to import: {kept} does not exist (the history took the whole run)")
        return 0
    run, stages = load_unrecorded(run_dir)
    outer = ctx.parent.params.get("history_file") if ctx.parent is not None else None  # history --history X import
    path = history_path(history_file or outer)
    try:
        with HistoryStore(path) as store:
            store.record_run(run, stages)
    except HistoryError as error:  # the history is still out: the records stay where they wait
        raise HistoryError(
            f"{error.message}; run {run.run_id}'s records still wait in {kept}",
            where=error.where,
            hint=f"{error.hint + '; ' if error.hint else ''}run `ci-tool history import {run_dir}` again once the "
            "history answers",
        ) from None
    tests = sum(len(found) for _, found, _ in stages)
    waiting = sum(1 for stage, _, _ in stages if stage.state is StageState.WAITING)
    click.echo(f"recorded run {run.run_id} ({run.state.words(waiting)}, {len(stages)} stages, {tests} tests) in {path}")
    return 0
