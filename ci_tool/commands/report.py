"""`ci-tool report RUN_ID`: the CI report of a recorded run, as the PR bot posts it (markdown), as JSON, or
as one self-contained HTML page whose links to the stages' folders and logs are relative to where it is
written."""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

import click

from ci_tool import output_files
from ci_tool.atomic import make_folder, write_text_atomically
from ci_tool.commands.history import history_option
from ci_tool.errors import HistoryError, Where
from ci_tool.history import queries
from ci_tool.history.locator import History
from ci_tool.history.perf_results import perf_trends
from ci_tool.history.queries import TREND_SAMPLES
from ci_tool.history.store import HistoryStore, StageRecord, history_path
from ci_tool.report.html import RunHref, render_html
from ci_tool.report.markdown import render_markdown
from ci_tool.report.model import CiReport, load_report, report_json

FORMATS = ("markdown", "json", "html")


@click.command()
@click.argument("run_id")
@history_option
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="markdown", show_default=True)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
def report(run_id: str, history_file: Path | None, output_format: str, output: Path | None) -> int:
    """Render the report of RUN_ID (`latest` for the newest run): state, stages, failures by signature,
    reruns, waives, stages not run and why."""
    with HistoryStore(history_path(history_file), read_only=True) as store:
        found_id = resolve_run_id(store, run_id)
        if output_format == "html":
            text = html_page(store, found_id, output.parent if output is not None else Path())
        else:
            found = load_report(store, found_id)
            markdown = output_format == "markdown"
            text = render_markdown(found) if markdown else json.dumps(report_json(found), indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        _write(output, text)
    return 0


def write_html_report(
    history: History | None, run_id: str, output: Path, *, kept: CiReport | None = None
) -> HistoryError | None:
    """The HTML report of run `run_id`, written to `output` (`run --html-report`): from the history (with its
    perf trends), or from `kept`, the run's report from its own results, where the history does not hold the
    run (`history` None) or cannot give it (that error is returned: the page is written all the same)."""
    failed: HistoryError | None = None
    if history is not None:
        try:
            with HistoryStore(history, read_only=True) as store:
                text = html_page(store, run_id, output.parent)
            _write(output, text)
            return None
        except HistoryError as error:
            if kept is None:
                raise
            failed = error
    if kept is None:
        raise ValueError("write_html_report() without a history or a kept report")
    _write(output, render_html(kept, stage_href=lambda stage: stage_folder_href(stage, output.parent)))
    return failed


def html_page(
    store: HistoryStore,
    run_id: str,
    page_folder: Path,
    *,
    trend_samples: int = TREND_SAMPLES,
    nav: Sequence[tuple[str, str]] = (),
    run_href: RunHref | None = None,
) -> str:
    """The report of `run_id` as one page, with its perf trends (the latest `trend_samples` values), whose
    links to the stages' folders are relative to `page_folder` (a site's pages add `nav` and `run_href`)."""
    found = load_report(store, run_id)
    return render_html(
        found,
        stage_href=lambda stage: stage_folder_href(stage, page_folder),
        nav=nav,
        perf_trends=perf_trends(store, found.perf, limit=trend_samples),
        run_href=run_href,
    )


def _write(output: Path, text: str) -> None:
    make_folder(output.parent, what="the report's folder")
    write_text_atomically(output, text, what="the report")
    output_files.record([output])  # output, never a change to the code


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


def stage_folder_href(stage: StageRecord, page_folder: Path) -> str | None:
    """The stage's results folder as a URL relative to `page_folder`, so the page keeps working when it
    moves together with the runs folder (a Jenkins artifact, a copied folder). A folder recorded relative
    is relative to the current directory, where `ci-tool run` wrote it."""
    if not stage.results_dir:
        return None
    relative = os.path.relpath(Path(stage.results_dir).absolute(), page_folder.absolute())
    return urllib.parse.quote(Path(relative).as_posix())
