"""Where each page of `ci-tool site` lives, and what a rebuild writes. Pure: summaries and the previous
manifest in, a plan out; `commands/site.py` reads the history and writes the files.

    index.html          the newest runs, filterable
    runs/<run>.html     the CI report of each of those runs
    flaky.html          flaky tests: flips, reruns that passed, last seen
    slowest.html        slowest tests and their duration trend
    perf.html           every perf-sanity case's metrics: newest value, baseline, verdict and trend
    ci-tool-site.json   the manifest: the renderer and the fingerprint of every run page written

Incremental: a run page is made again only when its run's fingerprint or the renderer changed; the other
pages are rendered every time (they read the whole window) and written only when their text changed.
Deterministic: the same history gives the same bytes (no clock in a page, rows in a fixed order).
Safe: only files the manifest names are ever replaced or removed; a folder that holds other files and no
manifest is refused, so a site is never built over someone's files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ci_tool.history.overview import RunSummary

MANIFEST = "ci-tool-site.json"
MANIFEST_VERSION = 1
RUNS_FOLDER = "runs"
PAGES = {"index": "index.html", "flaky": "flaky.html", "slowest": "slowest.html", "perf": "perf.html"}
NAV_LABELS = (("Runs", "index"), ("Flaky tests", "flaky"), ("Slowest tests", "slowest"), ("Perf", "perf"))
_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def run_page(run_id: str) -> str:
    """The run page's path inside the site: the run id where it is a plain file name (ci-tool's ids are),
    else its characters spelled out, so two ids never share a page."""
    name = run_id if _SAFE.fullmatch(run_id) else "x-" + "".join(c if c.isalnum() else f"_{ord(c):x}_" for c in run_id)
    return f"{RUNS_FOLDER}/{name}.html"


def nav(prefix: str = "") -> tuple[tuple[str, str], ...]:
    """The links every page shows; `prefix` leads from the page's folder to the site's top."""
    return tuple((label, prefix + PAGES[key]) for label, key in NAV_LABELS)


@dataclass(frozen=True)
class SitePlan:
    render: tuple[RunSummary, ...]  # the runs whose page is (re)written
    kept: int  # run pages left as they are
    remove: tuple[str, ...]  # pages of runs no longer on the site
    manifest: dict[str, object]  # what to write once the pages are


def plan_site(runs: Sequence[RunSummary], previous: Mapping[str, object] | None, renderer: str) -> SitePlan:
    """What to write for `runs` over a site whose manifest was `previous` (None: a new site)."""
    before = _pages(previous)
    same_renderer = previous is not None and previous.get("renderer") == renderer
    render = tuple(
        run
        for run in runs
        if not same_renderer or before.get(run.run.run_id) != (run_page(run.run.run_id), run.fingerprint)
    )
    on_site = {run.run.run_id for run in runs}
    remove = sorted(page for run_id, (page, _) in before.items() if run_id not in on_site and _is_run_page(page))
    manifest: dict[str, object] = {
        "version": MANIFEST_VERSION,
        "renderer": renderer,
        "runs": {run.run.run_id: {"page": run_page(run.run.run_id), "fingerprint": run.fingerprint} for run in runs},
    }
    return SitePlan(render, len(runs) - len(render), tuple(remove), manifest)


def _pages(manifest: Mapping[str, object] | None) -> dict[str, tuple[str, str]]:
    """run id -> (page, fingerprint) of a manifest; entries of another shape are ignored (rebuilt)."""
    runs = manifest.get("runs") if manifest is not None else None
    if not isinstance(runs, Mapping):
        return {}
    return {
        str(run_id): (str(entry.get("page")), str(entry.get("fingerprint")))
        for run_id, entry in runs.items()
        if isinstance(entry, Mapping)
    }


def _is_run_page(page: str) -> bool:
    """A path this module makes, and nothing else: a hand-edited manifest never removes another file."""
    folder, _, name = page.partition("/")
    return folder == RUNS_FOLDER and name.endswith(".html") and _SAFE.fullmatch(name) is not None
