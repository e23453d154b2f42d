"""The dashboard's own pages (`ci-tool site`): the run list, flaky tests, slowest tests and perf cases. Pure: history
rows in, HTML out. The run pages are the CI report (report/html.py); `site.py` says where each page lives.

The run list works without JavaScript (every run is a row); the script only adds a filter (by text and by
result) above it, which stays hidden where scripts do not run.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

from ci_tool.history.overview import RunSummary
from ci_tool.history.perf_results import PerfResult
from ci_tool.history.queries import FlakyTest, SlowTest
from ci_tool.outcomes import RunState
from ci_tool.perf.shifts import series_shifts
from ci_tool.report.html import PERF_HEADERS, perf_cells
from ci_tool.report.page import attribute, page, sparkline, state, table, text
from ci_tool.report.words import seconds_text

Nav = Sequence[tuple[str, str]]  # (label, href) from the page being rendered

FILTER_SCRIPT = """
(function () {
  var form = document.getElementById("run-filter");
  var query = document.getElementById("run-filter-text");
  var result = document.getElementById("run-filter-state");
  var count = document.getElementById("run-filter-count");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#runs tbody tr"));
  function apply() {
    var words = query.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var wanted = result.value, shown = 0;
    rows.forEach(function (row) {
      var haystack = row.textContent.toLowerCase();
      var match = (!wanted || row.dataset.state === wanted) &&
        words.every(function (word) { return haystack.indexOf(word) !== -1; });
      row.hidden = !match;
      if (match) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " runs shown";
  }
  form.hidden = false;
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  query.addEventListener("input", apply);
  result.addEventListener("change", apply);
  apply();
})();
"""


def utc_text(seconds: float) -> str:
    """Seconds since the epoch as `2026-12-01 11:32 UTC`."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def index_page(runs: Sequence[RunSummary], run_hrefs: Mapping[str, str], *, nav: Nav) -> str:
    """The newest runs first, each linked to its page."""
    rows = []
    for summary in runs:
        run = summary.run
        took = seconds_text(run.finished_at - run.started_at) if run.finished_at is not None else "running"
        rows.append(
            [
                f'<a href="{attribute(run_hrefs[run.run_id])}"><code>{text(run.run_id)}</code></a>',
                state(run.state.value, run.state.words(summary.waiting)),
                text(utc_text(run.started_at)),
                text(took),
                *(text(value) for value in (summary.stages, summary.passed, summary.failed, summary.skipped)),
                f"<code>{text(run.command)}</code>",
            ]
        )
    headers = ("Run", "Result", "Started", "Duration", "Stages", "Passed", "Failed", "Skipped", "Command")
    runs_table = table(
        f"The newest {len(runs)} runs, newest first",
        headers,
        rows,
        numbers=(4, 5, 6, 7),
        row_id="runs",
        row_data=[{"state": summary.run.state.value} for summary in runs],  # the filter matches results exactly
    )
    options = "".join(f'<option value="{attribute(s.value)}">{text(s.words())}</option>' for s in RunState)
    body = [
        "<h1>ci-tool runs</h1>",
        '<form id="run-filter" role="search" hidden>'
        '<label for="run-filter-text">Filter runs</label>'
        '<input type="search" id="run-filter-text" placeholder="run id, command, stage count…">'
        '<label for="run-filter-state">Result</label>'
        f'<select id="run-filter-state"><option value="">any</option>{options}</select>'
        ' <span id="run-filter-count" aria-live="polite"></span></form>',
        runs_table if runs else "<p>No runs recorded yet: run <code>ci-tool run</code>.</p>",
    ]
    return page("ci-tool runs", body, nav=nav, script=FILTER_SCRIPT if runs else "")


def flaky_page(flaky: Sequence[FlakyTest], run_hrefs: Mapping[str, str], *, window: int, nav: Nav) -> str:
    """Tests that passed on rerun or flipped outcome, most flips first, with where they were last seen."""
    rows = []
    for test in flaky:
        href = run_hrefs.get(test.last_seen_run)
        seen = f"<code>{text(test.last_seen_run)}</code>"
        seen = f'<a href="{attribute(href)}">{seen}</a>' if href is not None else seen
        rows.append(
            [
                f"<code>{text(test.test_id)}</code>",
                text(test.family),
                text(test.flips),
                text(test.passed_on_rerun),
                text(test.results),
                f'{seen} <span class="muted">{text(utc_text(test.last_seen_at))}</span>',
            ]
        )
    headers = ("Test", "Stage family", "Flips", "Passed on rerun", "Results", "Last seen")
    caption = f"Flaky tests of the last {window} runs: a rerun passed, or the outcome changed between runs"
    empty = f"No flaky test in the last {window} runs."
    return _table_page("Flaky tests", caption, headers, rows, numbers=(2, 3, 4), empty=empty, nav=nav)


def slowest_page(slowest: Sequence[SlowTest], *, window: int, nav: Nav) -> str:
    """The slowest tests by the median of their latest results, each with its duration trend."""
    rows = [
        [
            f"<code>{text(test.test_id)}</code>",
            text(seconds_text(test.median_seconds)),
            text(seconds_text(test.recent[-1])) if test.recent else "–",
            text(test.results),
            sparkline(test.recent, label=_trend_words(test)) or '<span class="muted">one result</span>',
        ]
        for test in slowest
    ]
    headers = ("Test", "Median", "Latest", "Results", "Trend (oldest to newest)")
    caption = f"The slowest tests of the last {window} runs, by the median of their latest results"
    empty = f"No test results in the last {window} runs."
    return _table_page("Slowest tests", caption, headers, rows, numbers=(1, 2, 3), empty=empty, nav=nav)


def perf_page(overview: Sequence[Sequence[PerfResult]], run_hrefs: Mapping[str, str], *, window: int, nav: Nav) -> str:
    """Every perf-sanity case's metrics: the newest result against its baseline, with its trend and the change
    points found in it (marked on the trend, and listed with the commit range each landed in)."""
    rows = []
    for series in overview:
        newest = series[-1]
        shifts = series_shifts(series)
        href = run_hrefs.get(newest.run_id)
        run = f"<code>{text(newest.run_id)}</code>"
        cells = perf_cells(newest, [r.value for r in series], marks=[s.point.index for s in shifts])
        changes = "<br>".join(text(s.line()) for s in shifts) or '<span class="muted">none</span>'
        rows.append([*cells, changes, f'<a href="{attribute(href)}">{run}</a>' if href else run])
    caption = f"Perf-sanity cases: the newest result of each metric and its last {window} results"
    headers = (*PERF_HEADERS, "Change points (E-Divisive means)", "Newest run")
    empty = "No perf-sanity results recorded yet."
    return _table_page("Perf cases", caption, headers, rows, numbers=(3, 4, 5), empty=empty, nav=nav)


def _table_page(
    heading: str,
    caption: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    numbers: Sequence[int],
    empty: str,
    nav: Nav,
) -> str:
    """A dashboard page of one table under its heading, or the `empty` sentence when there are no rows."""
    body = [f"<h1>{text(heading)}</h1>", table(caption, headers, rows, numbers=numbers) if rows else f"<p>{empty}</p>"]
    return page(f"ci-tool: {heading.lower()}", body, nav=nav)


def _trend_words(test: SlowTest) -> str:
    low, high = min(test.recent), max(test.recent)
    latest = seconds_text(test.recent[-1])
    return f"{len(test.recent)} durations from {seconds_text(low)} to {seconds_text(high)}, latest {latest}"
