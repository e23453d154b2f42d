"""The CI report of one run as a self-contained HTML page (what `ci-tool report RUN --format html` writes and
each run page of `ci-tool site` and `run --html-report` are). Pure: a CiReport and where the stages' folders
are, HTML out, from templates/run.html.j2 (this module gives it plain values; the template escapes them).

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
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath

from markupsafe import Markup

from ci_tool.errors import StageError
from ci_tool.history.perf_results import PerfResult
from ci_tool.history.reuse_sources import REUSED_FROM
from ci_tool.history.stage_details import Rerun
from ci_tool.history.store import StageRecord
from ci_tool.outcomes import COUNTED, PerfVerdict, StageState, TestOutcome
from ci_tool.perf.learning import no_baseline_line, unbaselined_gpus
from ci_tool.report.model import CiReport, FailedTest
from ci_tool.report.page import code, escaped, muted, render, sparkline, verdict
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
# How a perf verdict is coloured: the state class whose colour it shares.
_VERDICT_CLASS = {PerfVerdict.PASSED: "passed", PerfVerdict.REGRESSED: "failed", PerfVerdict.LOST_COVERAGE: "failed",
                  PerfVerdict.WARNED: "unstable", PerfVerdict.SKIPPED: "unstable"}  # fmt: skip


def render_html(
    report: CiReport,
    *,
    stage_href: StageHref,
    nav: Sequence[tuple[str, str]] = (),
    run_href: RunHref | None = None,
) -> str:
    """The report page. `stage_href` gives each stage's folder relative to where the page is written;
    `run_href` links the runs reused stages passed in; each perf metric's trend is the report's own."""
    return render("run.html.j2", run_context(report, stage_href=stage_href, nav=nav, run_href=run_href))


def run_context(
    report: CiReport, *, stage_href: StageHref, nav: Sequence[tuple[str, str]], run_href: RunHref | None
) -> dict[str, object]:
    """What templates/run.html.j2 prints: plain values (the template escapes them) and HTML from macros."""
    run = report.run
    words = run.state.words(report.waiting)
    started = datetime.datetime.fromtimestamp(run.started_at, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    stages = {stage.name: stage for stage in report.stages}
    return {
        "title": f"ci-tool run {run.run_id}: {words}",
        "nav": nav,
        "script": "",
        "run_id": run.run_id,
        "state": run.state.value,
        "words": words,
        "command": run.command,
        "stage_count": counted(len(report.stages), "stage"),
        "counts": totals_words(report),
        "started": started,
        "host": run.host,
        "stage_headers": ("Stage", "Result", "Duration", "Shard", "Passed", "Failed", "Skipped", "Reruns"),
        "stage_numbers": (4, 5, 6, 7),
        "stages": _stages(report, stage_href),
        "failures": _failures(report, stages, stage_href),
        "known_flaky": _known_flaky(report, stages, stage_href),
        "rerun_headers": ("Test", "Stage", "Signature", "Rerun"),
        "reruns": [_rerun(rerun) for rerun in report.reruns],
        "waives": _waives(report),
        "perf_headers": PERF_HEADERS,
        "perf_numbers": PERF_NUMBERS,
        "perf": _perf(report),
        "reused": _reused(report, run_href),
        "not_run": [
            {"name": s.name, "state": s.state.value, "words": s.state.words, "reason": s.reason}
            for s in report.stages
            if not s.state.ran and s.state is not StageState.REUSED
        ],
        "uncollected": report.uncollected,
    }


def _stages(report: CiReport, stage_href: StageHref) -> list[dict[str, object]]:
    reruns = Counter(rerun.stage for rerun in report.reruns)
    rows = []
    for stage in report.stages:
        ran = stage.state.ran
        rows.append(
            {
                "name": stage.name,
                "href": stage_href(stage) if ran else None,
                "state": stage.state.value,
                "words": stage.state.words,
                "reason": stage.reason,
                "duration": seconds_text(stage.duration_seconds) if ran else "–",
                "shard": _shard(stage.name),
                **{key.value: getattr(stage, key) if ran else "–" for key in COUNTED},
                "reruns": reruns[stage.name] if ran else "–",
            }
        )
    return rows


def _failures(report: CiReport, stages: Mapping[str, StageRecord], stage_href: StageHref) -> dict[str, object] | None:
    if not report.failures:
        return None
    count = sum(len(group.tests) for group in report.failures)
    signatures = counted(len(report.failures), "signature")
    groups = [
        {
            "signature": group.signature,
            "count": counted(len(group.tests), "test"),
            "tests": [_failed_test(test, stages.get(test.stage), stage_href) for test in group.tests],
            "excerpt": group.tests[0].excerpt or group.tests[0].message,
        }
        for group in report.failures
    ]
    return {"title": f"{failures_title(report)}: {counted(count, 'test')}, {signatures}", "groups": groups}


def _known_flaky(
    report: CiReport, stages: Mapping[str, StageRecord], stage_href: StageHref
) -> dict[str, object] | None:
    if not report.known_flaky:
        return None
    tests = []
    for test in report.known_flaky:
        assert test.flake is not None  # the section holds only known flaky failures
        failed = _failed_test(test, stages.get(test.stage), stage_href)
        tests.append({"test": failed, "words": known_flaky_words(test.flake), "signature": test.flake.signature})
    title = f"{KNOWN_FLAKY_TITLE}: {counted(len(report.known_flaky), 'test')}"
    return {"title": title, "note": KNOWN_FLAKY_NOTE, "tests": tests}


def _failed_test(test: FailedTest, stage: StageRecord | None, stage_href: StageHref) -> dict[str, object]:
    """A failed test and the link to its log (relative to the page), where its stage's folder has one."""
    logs = stage.details.get("logs", {}) if stage is not None else {}
    folder = stage_href(stage) if stage is not None else None
    log = logs.get(test.test_id) if isinstance(logs, dict) else None
    href = None
    if folder is not None and isinstance(log, str):
        absolute = PurePosixPath(log).is_absolute()
        href = PurePosixPath(log).as_uri() if absolute else folder.rstrip("/") + "/" + urllib.parse.quote(log)
    error = test.outcome is TestOutcome.ERROR
    return {"test_id": test.test_id, "stage": test.stage, "error": error, "log_href": href}


def _rerun(rerun: Rerun) -> dict[str, object]:
    passed = rerun.outcome is TestOutcome.PASSED
    verdict = "passed on rerun (unstable, not green)" if passed else "failed again"
    return {"test_id": rerun.test_id, "stage": rerun.stage, "signature": rerun.signature, "verdict": verdict}


def _waives(report: CiReport) -> dict[str, object] | None:
    """The waives applied, by reason: a reason's issue links (http and https only) become links."""
    if not report.waives:
        return None
    total = sum(len(ids) for _, ids in report.waives)
    reasons = [{"reason": link_pieces(reason), "tests": ids} for reason, ids in report.waives]
    return {"title": f"Waives applied: {counted(total, 'test')}", "reasons": reasons}


def _perf(report: CiReport) -> dict[str, object] | None:
    results = report.perf
    if not results:
        return None
    quiet_needed = dict(report.quiet_needed)
    unbaselined = [no_baseline_line(gpu, quiet_needed.get(gpu)) for gpu in unbaselined_gpus(results)]
    rows = [perf_cells(r, report.perf_trends.get((r.case_id, r.gpu, r.metric), ())) for r in results]
    cases = len({(r.stage, r.case_id) for r in results})
    return {"title": f"Perf: {counted(cases, 'case')}", "unbaselined": unbaselined, "rows": rows}


def perf_cells(r: PerfResult, values: Sequence[float], *, marks: Sequence[int] = ()) -> list[Markup]:
    """A perf metric's cells (HTML): case, GPU, metric, value, baseline, delta, verdict and trend (`values`,
    with its change points `marks`)."""
    verdict_words = r.verdict.value.replace("_", " ") + (f": {r.note}" if r.note else "")
    label = f"{r.metric} of {r.case_id} on {r.gpu} over {len(values)} results" + (
        f", baseline {r.baseline:.4g}" if r.baseline is not None else ""
    )
    trend = sparkline(values, label=label, reference=r.baseline, marks=marks)
    return [
        code(r.case_id),
        escaped(r.gpu),
        escaped(r.metric),
        escaped(f"{r.value:.4g}"),
        escaped(f"{r.baseline:.4g}" if r.baseline is not None else "–"),
        escaped(f"{r.delta:+.1%}" if r.delta is not None else "–"),
        verdict(_VERDICT_CLASS.get(r.verdict, "muted"), verdict_words),
        Markup(trend) if trend else muted("one result" if values else "no trend"),
    ]


PERF_HEADERS = ("Case", "GPU", "Metric", "Value", "Baseline", "Delta", "Verdict", "Trend (oldest to newest)")
PERF_NUMBERS = (3, 4, 5)  # the right-aligned columns of PERF_HEADERS


def _reused(report: CiReport, run_href: RunHref | None) -> dict[str, object] | None:
    reused = [stage for stage in report.stages if stage.state is StageState.REUSED]
    if not reused:
        return None
    stages = []
    for stage in reused:
        origin = stage.details.get(REUSED_FROM)
        origin = origin if isinstance(origin, str) else ""
        href = run_href(origin) if origin and run_href is not None else None
        stages.append({"name": stage.name, "origin": origin, "origin_href": href, "reason": stage.reason})
    title = f"Stages reused: {counted(len(reused), 'stage')}, passed in an earlier run of the same code"
    return {"title": title, "stages": stages}


def _shard(name: str) -> str:
    try:
        shard = parse_stage_name(name).shard
    except StageError:  # a recorded name of another grammar still gets a row
        return "–"
    return str(shard) if shard is not None else "–"
