"""`ci-tool durations export`: the `.test_durations` JSON sharding reads, from the recorded history, merged
into the file it writes (`--replace` writes the history's entries alone): each test's seconds, and each list
entry's per-process cost (`process-cost:<entry>`, stages/durations.py)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ci_tool.atomic import write_text_atomically
from ci_tool.commands import number_types
from ci_tool.commands.history_options import history_option
from ci_tool.errors import ShardError
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore, history_path
from ci_tool.stages.durations import load_durations, process_cost_key


@click.group()
def durations() -> None:
    """Test durations recorded by local runs."""


@durations.command("export")
@history_option
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--window", default=50, show_default=True, type=number_types.count(), help="Latest runs to read.")
@click.option(
    "--replace", is_flag=True, help="With --output: write only the history's entries, dropping the file's others."
)
def export(history_file: Path | None, output: Path | None, window: int, replace: bool) -> int:
    """Write test id -> median seconds of its latest results (pytest-split's `.test_durations` format), and
    each list entry's per-process cost beyond its tests (`process-cost:<entry>`), which predictions add;
    `--output test-db/.test_durations` is where planning reads it, so shards rebalance from real runs.
    An existing --output file is merged into: recorded entries update, the others stay."""
    if replace and output is None:
        raise click.UsageError("--replace goes with --output")
    with HistoryStore(history_path(history_file), read_only=True) as store:
        found = queries.export_durations(store, window_runs=window)
        costs = queries.export_process_costs(store, window_runs=window)
    found = dict(sorted({**found, **{process_cost_key(entry): cost for entry, cost in costs.items()}}.items()))
    if output is None:
        click.echo(json.dumps(found, indent=2) + "\n", nl=False)
        return 0
    if replace:
        _write(output, found)
        click.echo(f"wrote {len(found)} test durations to {output}, replacing it", err=True)
        return 0
    merged = queries.merge_durations(_existing(output), found)
    _write(output, merged.durations)
    click.echo(
        f"wrote {len(merged.durations)} test durations to {output}: {merged.updated} updated, {merged.added} added, "
        f"{merged.kept} kept",
        err=True,
    )
    return 0


def _existing(output: Path) -> dict[str, float]:
    """The durations already in `output` (none when there is no such file); a bad file is left as it is."""
    if not output.exists():
        return {}
    try:
        return load_durations(output)
    except ShardError as error:
        raise ShardError(
            error.message,
            where=error.where,
            hint=f"{error.hint + '; ' if error.hint else ''}fix the file, or pass --replace to write the "
            "history's durations over it",
        ) from None


def _write(output: Path, durations: dict[str, float]) -> None:
    write_text_atomically(output, json.dumps(durations, indent=2) + "\n", what="the durations file")
