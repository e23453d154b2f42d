"""A run's report where it is written: the HTML page of `ci-tool run --html-report`, `ci-tool report --format
html` and each run page of `ci-tool site`, its links to the stages' folders and logs relative to the page's
folder (so the page keeps working when it moves together with the runs folder: a Jenkins artifact, a copied
folder), and the report files the verbs write.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

from ci_tool import output_files
from ci_tool.atomic import make_folder, write_text_atomically
from ci_tool.history.store import StageRecord
from ci_tool.report.html import RunHref, render_html
from ci_tool.report.model import CiReport


def run_page(
    report: CiReport, page_folder: Path, *, nav: Sequence[tuple[str, str]] = (), run_href: RunHref | None = None
) -> str:
    """The report as one page written in `page_folder` (a site's pages add `nav` and `run_href`)."""
    return render_html(
        report, stage_href=lambda stage: stage_folder_href(stage, page_folder), nav=nav, run_href=run_href
    )


def write_html_report(report: CiReport, output: Path) -> None:
    """The report's page at `output`: the run's own report value, the one its report.md renders."""
    write_report(output, run_page(report, output.parent))


def write_report(output: Path, text: str) -> None:
    """A report file (markdown, JSON or HTML) at `output`, its folder made; output, never a change to the code."""
    make_folder(output.parent, what="the report's folder")
    write_text_atomically(output, text, what="the report")
    output_files.record([output])


def stage_folder_href(stage: StageRecord, page_folder: Path) -> str | None:
    """The stage's results folder as a URL relative to `page_folder`. A folder recorded relative is relative
    to the current directory, where `ci-tool run` wrote it."""
    if not stage.results_dir:
        return None
    relative = os.path.relpath(Path(stage.results_dir).absolute(), page_folder.absolute())
    return urllib.parse.quote(Path(relative).as_posix())
