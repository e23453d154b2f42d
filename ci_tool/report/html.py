"""The CI report of one run as a self-contained HTML page (what `ci-tool report RUN --format html` writes and
each run page of `ci-tool site` is). Pure: a CiReport and where the stages' folders are, HTML out.

    summary       the run's state, command, totals and duration
    stages        result, duration, shard, counts and reruns of every stage
    failures      grouped by signature, each group a `details` with its tests, a link to each test's log
                  (relative to the page), and the first lines of output of its first test
    known flaky   failures of tests known flaky on that GPU type before the run, with their rate, apart
    reruns        known flaky failures run again, and how they ended
    waives        the waives that skipped tests, by reason
    perf          every perf-sanity metric of the run: value, baseline, delta, verdict, and its trend up to
                  this run (inline SVG, the baseline dashed)
    reused        the stages not run again because they passed in an earlier run of the same code, and where
    not run       the stages that waited or were skipped, and why
    uncollected   list entries that selected no test
"""

from __future__ import annotations

import datetime
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath

from ci_tool.errors import StageError
from ci_tool.history.perf_results import PerfKey, PerfResult
from ci_tool.history.reuse import REUSED_FROM
from ci_tool.history.store import StageRecord
from ci_tool.outcomes import PerfVerdict, StageState, TestOutcome
from ci_tool.perf.learning import no_baseline_line, unbaselined_gpus
from ci_tool.report.model import CiReport, FailedTest
from ci_tool.report.page import attribute, page, sparkline, state, table, text
from ci_tool.report.words import (
    KNOWN_FLAKY_NOTE,
    KNOWN_FLAKY_TITLE,
    counted,
    failures_title,
    known_flaky_words,
    seconds_text,
    totals_words,
)
from ci_tool.stages.names import parse_stage_name
from ci_tool.testdb.waive_terms import link_pieces

StageHref = Callable[[StageRecord], str | None]  # a stage's results folder as a URL from the page, if any
RunHref = Callable[[str], str | None]  # another run's page as a URL from this one, if it has one
PerfTrends = Mapping[PerfKey, Sequence[float]]  # (case, GPU type, metric) -> its values, oldest first
# How a perf verdict is coloured: the state class whose colour it shares.
_VERDICT_CLASS = {PerfVerdict.PASSED: "passed", PerfVerdict.REGRESSED: "failed", PerfVerdict.LOST_COVERAGE: "failed",
                  PerfVerdict.WARNED: "unstable", PerfVerdict.SKIPPED: "unstable"}  # fmt: skip


def render_html(
    report: CiReport,
    *,
    stage_href: StageHref,
    nav: Sequence[tuple[str, str]] = (),
    perf_trends: PerfTrends | None = None,
    run_href: RunHref | None = None,
) -> str:
    """The report page. `stage_href` gives each stage's folder relative to where the page is written;
    `run_href` links the runs reused stages passed in; `perf_trends` draws each perf metric's trend."""
    run = report.run
    words = run.state.words(report.waiting)
    stages = {stage.name: stage for stage in report.stages}
    body = [
        f"<h1>ci-tool run <code>{text(run.run_id)}</code>: {state(run.state.value, words)}</h1>",
        _summary(report),
        *_stages(report, stage_href),
        *_failures(report, stages, stage_href),
        *_known_flaky(report, stages, stage_href),
        *_reruns(report),
        *_waives(report),
        *_perf(report.perf, perf_trends or {}, dict(report.quiet_needed)),
        *_reused(report, run_href),
        *_not_run(report),
        *_uncollected(report),
    ]
    return page(f"ci-tool run {run.run_id}: {words}", body, nav=nav)


def _summary(report: CiReport) -> str:
    run = report.run
    started = datetime.datetime.fromtimestamp(run.started_at, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    counts = totals_words(report)
    return (
        f"<p><code>{text(run.command)}</code> · {counted(len(report.stages), 'stage')} · {text(counts)}</p>"
        f'<p class="muted">started {text(started)}' + (f" on {text(run.host)}" if run.host else "") + "</p>"
    )


def _stages(report: CiReport, stage_href: StageHref) -> list[str]:
    reruns: dict[str, int] = {}
    for rerun in report.reruns:
        reruns[str(rerun.get("stage"))] = reruns.get(str(rerun.get("stage")), 0) + 1
    rows = []
    for stage in report.stages:
        ran = stage.state.ran
        result = state(stage.state.value, stage.state.words) + (
            f" <span>({text(stage.reason)})</span>" if stage.reason else ""
        )
        folder = stage_href(stage) if ran else None
        name = f"<code>{text(stage.name)}</code>"
        rows.append(
            [
                f'<a href="{text(folder)}">{name}</a>' if folder is not None else name,
                result,
                text(seconds_text(stage.duration_seconds)) if ran else "–",
                text(_shard(stage.name)),
                *(text(getattr(stage, key)) if ran else "–" for key in ("passed", "failed", "skipped")),
                text(reruns.get(stage.name, 0)) if ran else "–",
            ]
        )
    headers = ("Stage", "Result", "Duration", "Shard", "Passed", "Failed", "Skipped", "Reruns")
    return [
        '<h2 id="stages">Stages</h2>',
        table("Every stage of the run, in order", headers, rows, numbers=(4, 5, 6, 7)),
    ]


def _failures(report: CiReport, stages: dict[str, StageRecord], stage_href: StageHref) -> list[str]:
    if not report.failures:
        return []
    count = sum(len(group.tests) for group in report.failures)
    signatures = counted(len(report.failures), "signature")
    parts = [f'<h2 id="failures">{failures_title(report)}: {counted(count, "test")}, {signatures}</h2>']
    for group in report.failures:
        items = "".join(f"<li>{_failed_test(test, stages.get(test.stage), stage_href)}</li>" for test in group.tests)
        excerpt = group.tests[0].excerpt or group.tests[0].message
        parts.append(
            '<details class="failure">'
            f"<summary><code>{text(group.signature)}</code> ({counted(len(group.tests), 'test')})</summary>"
            f"<ul>{items}</ul>" + (f"<pre>{text(excerpt)}</pre>" if excerpt else "") + "</details>"
        )
    return parts


def _known_flaky(report: CiReport, stages: dict[str, StageRecord], stage_href: StageHref) -> list[str]:
    if not report.known_flaky:
        return []
    items = []
    for test in report.known_flaky:
        assert test.flake is not None  # the section holds only known flaky failures
        signature = f", <code>{text(test.flake.signature)}</code>" if test.flake.signature else ""
        line = _failed_test(test, stages.get(test.stage), stage_href)
        items.append(f"<li>{line}: {text(known_flaky_words(test.flake))}{signature}</li>")
    title = f"{KNOWN_FLAKY_TITLE}: {counted(len(report.known_flaky), 'test')}"
    return [
        f'<h2 id="known-flaky">{text(title)}</h2>',
        f'<p class="muted">{text(KNOWN_FLAKY_NOTE)}.</p>',
        f"<ul>{''.join(items)}</ul>",
    ]


def _failed_test(test: FailedTest, stage: StageRecord | None, stage_href: StageHref) -> str:
    line = f"<code>{text(test.test_id)}</code> in {text(test.stage)}"
    if test.outcome is TestOutcome.ERROR:
        line += " (error)"
    logs = stage.details.get("logs", {}) if stage is not None else {}
    folder = stage_href(stage) if stage is not None else None
    log = logs.get(test.test_id) if isinstance(logs, dict) else None
    if folder is not None and isinstance(log, str):
        href = (
            PurePosixPath(log).as_uri()
            if PurePosixPath(log).is_absolute()
            else folder.rstrip("/") + "/" + urllib.parse.quote(log)
        )
        line += f' · <a href="{text(href)}">log</a>'
    return line


def _reruns(report: CiReport) -> list[str]:
    if not report.reruns:
        return []
    rows = [
        [
            f"<code>{text(r.get('test_id'))}</code>",
            text(r.get("stage")),
            f"<code>{text(r.get('signature'))}</code>",
            "passed on rerun (unstable, not green)" if r.get("rerun") == TestOutcome.PASSED else "failed again",
        ]
        for r in report.reruns
    ]
    headers = ("Test", "Stage", "Signature", "Rerun")
    return ['<h2 id="reruns">Reruns of known flaky failures</h2>', table("Known flaky failures", headers, rows)]


def _waives(report: CiReport) -> list[str]:
    if not report.waives:
        return []
    total = sum(len(ids) for _, ids in report.waives)
    items = "".join(
        f"<li>{_linked(reason)}: " + ", ".join(f"<code>{text(test_id)}</code>" for test_id in ids) + "</li>"
        for reason, ids in report.waives
    )
    return [f'<h2 id="waives">Waives applied: {counted(total, "test")}</h2>', f"<ul>{items}</ul>"]


def _linked(reason: str) -> str:
    """A waive's reason, its issue links (http and https only) as links and everything escaped."""
    return "".join(
        f'<a href="{attribute(piece)}">{text(piece)}</a>' if is_link else text(piece)
        for piece, is_link in link_pieces(reason)
    )


def _perf(results: Sequence[PerfResult], trends: PerfTrends, quiet_needed: Mapping[str, int]) -> list[str]:
    if not results:
        return []
    unbaselined = [f"<p>{text(no_baseline_line(gpu, quiet_needed.get(gpu)))}</p>" for gpu in unbaselined_gpus(results)]
    rows = []
    for r in results:
        rows.append(perf_cells(r, trends.get((r.case_id, r.gpu, r.metric), ())))
    cases = len({(r.stage, r.case_id) for r in results})
    return [
        f'<h2 id="perf">Perf: {counted(cases, "case")}</h2>',
        *unbaselined,
        table("Every perf-sanity metric of the run against its baseline", PERF_HEADERS, rows, numbers=(3, 4, 5)),
    ]


def perf_cells(r: PerfResult, values: Sequence[float], *, marks: Sequence[int] = ()) -> list[str]:
    """A perf metric's row: case, GPU, metric, value, baseline, delta, verdict and trend (`values`, with its
    change points `marks`)."""
    verdict = r.verdict.value.replace("_", " ") + (f": {r.note}" if r.note else "")
    label = f"{r.metric} of {r.case_id} on {r.gpu} over {len(values)} results" + (
        f", baseline {r.baseline:.4g}" if r.baseline is not None else ""
    )
    return [
        f"<code>{text(r.case_id)}</code>",
        text(r.gpu),
        text(r.metric),
        text(f"{r.value:.4g}"),
        text(f"{r.baseline:.4g}") if r.baseline is not None else "–",
        text(f"{r.delta:+.1%}") if r.delta is not None else "–",
        f'<span class="{attribute(_VERDICT_CLASS.get(r.verdict, "muted"))}">{text(verdict)}</span>',
        sparkline(values, label=label, reference=r.baseline, marks=marks) or '<span class="muted">one result</span>',
    ]


PERF_HEADERS = ("Case", "GPU", "Metric", "Value", "Baseline", "Delta", "Verdict", "Trend (oldest to newest)")


def _reused(report: CiReport, run_href: RunHref | None) -> list[str]:
    reused = [stage for stage in report.stages if stage.state is StageState.REUSED]
    if not reused:
        return []
    items = []
    for stage in reused:
        origin = stage.details.get(REUSED_FROM)
        if isinstance(origin, str) and origin:
            href = run_href(origin) if run_href is not None else None
            run = f"<code>{text(origin)}</code>"
            where = "passed in run " + (f'<a href="{attribute(href)}">{run}</a>' if href is not None else run)
        else:
            where = text(stage.reason)
        items.append(f"<li><code>{text(stage.name)}</code>: {where}</li>")
    title = f"Stages reused: {counted(len(reused), 'stage')}, passed in an earlier run of the same code"
    return [f'<h2 id="reused">{title}</h2>', f"<ul>{''.join(items)}</ul>"]


def _not_run(report: CiReport) -> list[str]:
    not_run = [stage for stage in report.stages if not stage.state.ran and stage.state is not StageState.REUSED]
    if not not_run:
        return []
    items = "".join(
        f"<li><code>{text(s.name)}</code>: {state(s.state.value, s.state.words)}: {text(s.reason)}</li>"
        for s in not_run
    )
    return ['<h2 id="not-run">Stages not run</h2>', f"<ul>{items}</ul>"]


def _uncollected(report: CiReport) -> list[str]:
    if not report.uncollected:
        return []
    items = "".join(
        f"<li><code>{text(u.get('id'))}</code> in {text(u.get('stage'))}: {text(u.get('reason'))}</li>"
        for u in report.uncollected
    )
    return ['<h2 id="uncollected">List entries that collected nothing</h2>', f"<ul>{items}</ul>"]


def _shard(name: str) -> str:
    try:
        shard = parse_stage_name(name).shard
    except StageError:  # a recorded name of another grammar still gets a row
        return "–"
    return str(shard) if shard is not None else "–"
