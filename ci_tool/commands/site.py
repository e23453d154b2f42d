"""`ci-tool site --output DIR`: the static dashboard from the history (report/site.py says what is where).
Load the summaries and the old manifest -> plan -> render and write the pages that changed -> remove the
pages of runs no longer on the site -> write the manifest last, so an interrupted build is redone next time."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import click

from ci_tool import output_files
from ci_tool import report as report_package
from ci_tool.atomic import make_folder, write_text_atomically
from ci_tool.commands import number_types
from ci_tool.commands.history_options import history_option
from ci_tool.errors import ReportError, Where
from ci_tool.history import overview, queries
from ci_tool.history.perf_results import perf_overview
from ci_tool.history.rows import BadRowError
from ci_tool.history.store import HistoryStore, history_path
from ci_tool.json_file import read_json
from ci_tool.report import dashboard
from ci_tool.report import site as layout
from ci_tool.report.model import load_report
from ci_tool.report.run_page import run_page


@click.command()
@click.option("--output", required=True, type=click.Path(file_okay=False, path_type=Path), help="The site's folder.")
@history_option
@click.option(
    "--runs", "limit", default=200, show_default=True, type=number_types.count(), help="Newest runs on the site."
)
@click.option("--window", default=30, show_default=True, type=number_types.count(), help="Runs the test pages read.")
def site(output: Path, history_file: Path | None, limit: int, window: int) -> int:
    """Build a static dashboard in OUTPUT from the history: the newest runs (filterable), a report page per
    run, flaky tests, slowest tests and perf cases with their trends. A rebuild writes only what changed."""
    previous = _previous_manifest(output)
    runs_folder = output / layout.RUNS_FOLDER
    make_folder(runs_folder, what="the site's folder")
    with HistoryStore(history_path(history_file), read_only=True) as store:
        summaries = overview.run_summaries(store, limit=limit)
        plan = layout.plan_site(summaries, previous, _renderer())
        hrefs = {summary.run.run_id: layout.run_page(summary.run.run_id) for summary in summaries}
        _write_run_pages(store, plan, hrefs, output, window=window)
        flaky = queries.flaky_tests(store, window_runs=window)
        slowest = queries.slowest_tests(store, limit=50, window_runs=window)
        perf = perf_overview(store, limit=window)
    pages = {
        layout.PAGES["index"]: dashboard.index_page(summaries, hrefs, nav=layout.nav()),
        layout.PAGES["flaky"]: dashboard.flaky_page(flaky, hrefs, window=window, nav=layout.nav()),
        layout.PAGES["slowest"]: dashboard.slowest_page(slowest, window=window, nav=layout.nav()),
        layout.PAGES["perf"]: dashboard.perf_page(perf, hrefs, window=window, nav=layout.nav()),
    }
    changed = sum(_write_if_changed(output / name, text) for name, text in pages.items())
    for page in plan.remove:
        with contextlib.suppress(FileNotFoundError):
            (output / page).unlink()
    write_text_atomically(output / layout.MANIFEST, _json(plan.manifest), what="the site's manifest")
    site_files = [layout.MANIFEST, *pages, *hrefs.values()]
    output_files.record(output / name for name in site_files)  # output, never a change to the code
    click.echo(
        f"site: {len(plan.render)} run pages written, {plan.kept} unchanged, {len(plan.remove)} removed, "
        f"{changed} of {len(pages)} summary pages changed; open {output / layout.PAGES['index']}"
    )
    return 0


def _write_run_pages(
    store: HistoryStore, plan: layout.SitePlan, hrefs: Mapping[str, str], output: Path, *, window: int
) -> None:
    """The run pages the plan renders; a run whose rows are bad is left out with a warning."""
    runs_folder = output / layout.RUNS_FOLDER
    for summary in plan.render:
        try:
            found = load_report(store, summary.run.run_id, trend_samples=window)
            page = run_page(
                found, runs_folder, nav=layout.nav("../"), run_href=lambda run_id: _sibling(hrefs.get(run_id))
            )
        except BadRowError as error:  # one run's bad row: the rest of the site still builds
            store.warn(f"{error}; the page of run {summary.run.run_id} is left out")
            continue
        write_text_atomically(output / hrefs[summary.run.run_id], page, what="a run page")


def _sibling(page: str | None) -> str | None:
    """Another run's page as a link from a run page (both in the runs folder)."""
    return page.split("/", 1)[1] if page is not None else None


def _previous_manifest(output: Path) -> Mapping[str, object] | None:
    """The manifest of the site in `output`; None for a new or empty folder; an error for a folder of
    other files (a site is never built over them)."""
    manifest = output / layout.MANIFEST
    if manifest.is_file():
        value = read_json(manifest, name="the site's manifest", error=ReportError)
        if not isinstance(value, dict):
            raise ReportError(
                "expected the site's manifest (a JSON object), found another JSON value",
                where=Where(str(manifest)),
                hint=f"remove {manifest} and the pages beside it, or build the site into a new folder",
            )
        return value
    if output.is_dir() and any(output.iterdir()):
        raise ReportError(
            f"expected an empty folder or a site ci-tool built, found files and no {layout.MANIFEST}",
            where=Where(str(output)),
            hint="pass --output with a new folder: a site never replaces files it did not write",
        )
    return None


def _write_if_changed(path: Path, text: str) -> bool:
    """Write `path` unless it holds `text` already (an unchanged page keeps its time stamp)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if path.read_text(encoding="utf-8") == text:
            return False
    write_text_atomically(path, text, what="a page of the site")
    return True


def _renderer() -> str:
    """Which renderer made the pages: a hash of the sources that shape them (the report package, the
    report's model and its templates among them), so a change of any page's shape makes every run page
    again, and nothing else does."""
    digest = hashlib.sha256()
    folder = Path(report_package.__file__).parent
    for source in sorted([*folder.glob("*.py"), *folder.glob("templates/*.j2")]):
        digest.update(source.relative_to(folder).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:16]


def _json(value: object) -> str:
    return json.dumps(value, indent=1, sort_keys=True) + "\n"
