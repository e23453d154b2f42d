"""`ci-tool report RUN_ID`: the CI report of a recorded run, as the PR bot posts it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ci_tool.atomic import write_text_atomically
from ci_tool.commands.history import history_option
from ci_tool.errors import HistoryError, Where
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore, history_path
from ci_tool.run.report import load_report, render_markdown, report_json

FORMATS = ("markdown", "json")


@click.command()
@click.argument("run_id")
@history_option
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="markdown", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
def report(run_id: str, history_file: Path | None, output_format: str, output: Path | None) -> int:
    """Render the report of RUN_ID (`latest` for the newest run): state, stages, failures by signature,
    reruns, waives, stages not run and why."""
    with HistoryStore(history_path(history_file), read_only=True) as store:
        if run_id == "latest":
            newest = queries.recent_runs(store, limit=1)
            if not newest:
                raise HistoryError(
                    "expected a recorded run for `latest`, found a history without runs",
                    where=Where(str(store.path)),
                    hint="run `ci-tool run` or `ci-tool stage run` first, or pass --history PATH",
                )
            run_id = newest[0].run_id
        found = load_report(store, run_id)
    text = render_markdown(found) if output_format == "markdown" else json.dumps(report_json(found), indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_atomically(output, text, what="the report")
    return 0
