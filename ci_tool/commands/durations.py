"""`ci-tool durations export`: the `.test_durations` JSON sharding reads, from the recorded history."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ci_tool.atomic import write_text_atomically
from ci_tool.commands import bounds
from ci_tool.commands.history import history_option
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore, history_path


@click.group()
def durations() -> None:
    """Test durations recorded by local runs."""


@durations.command("export")
@history_option
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--window", default=50, show_default=True, type=bounds.count(), help="Latest runs to read.")
def export(history_file: Path | None, output: Path | None, window: int) -> int:
    """Write test id -> median seconds of its latest results (pytest-split's `.test_durations` format);
    `--output test-db/.test_durations` is where planning reads it, so shards rebalance from real runs."""
    with HistoryStore(history_path(history_file), read_only=True) as store:
        found = queries.export_durations(store, window_runs=window)
    text = json.dumps(found, indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_atomically(output, text, what="the durations file")
        click.echo(f"wrote {len(found)} test durations to {output}", err=True)
    return 0
