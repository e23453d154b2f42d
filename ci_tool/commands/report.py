"""`ci-tool report RUN_ID`: the CI report of a recorded run, as the PR bot posts it (markdown), as JSON, or
as one self-contained HTML page whose links to the stages' folders and logs are relative to where it is
written (report/run_page.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import click

from ci_tool.commands.history_options import history_option
from ci_tool.errors import HistoryError, Where
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore, history_path
from ci_tool.report.model import CiReport, load_report, report_json
from ci_tool.report.report_markdown import render_markdown
from ci_tool.report.run_page import run_page, write_report

# --format's choices: each renders the report (the HTML page links its stages' files relative to its folder)
_RENDERERS: dict[str, Callable[[CiReport, Path], str]] = {
    "markdown": lambda found, _folder: render_markdown(found),
    "json": lambda found, _folder: json.dumps(report_json(found), indent=2) + "\n",
    "html": run_page,
}
FORMATS = tuple(_RENDERERS)


@click.command()
@click.argument("run_id")
@history_option
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="markdown", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
def report(run_id: str, history_file: Path | None, output_format: str, output: Path | None) -> int:
    """Render the report of RUN_ID (`latest` for the newest run): state, stages, failures by signature,
    reruns, waives, stages not run and why."""
    with HistoryStore(history_path(history_file), read_only=True) as store:
        found = load_report(store, resolve_run_id(store, run_id))
    text = _rendered(found, output_format, output.parent if output is not None else Path())
    if output is None:
        click.echo(text, nl=False)
    else:
        write_report(output, text)
    return 0


def _rendered(found: CiReport, output_format: str, page_folder: Path) -> str:
    return _RENDERERS[output_format](found, page_folder)


def resolve_run_id(store: HistoryStore, run_id: str) -> str:
    """`latest` is the newest recorded run; any other id is itself."""
    if run_id != "latest":
        return run_id
    newest = queries.newest_run_id(store)
    if newest is None:
        raise HistoryError(
            "expected a recorded run for `latest`, found a history without runs",
            where=Where(str(store.path)),
            hint="run `ci-tool run` or `ci-tool stage run` first, or pass --history PATH",
        )
    return newest
