"""The CI report of a run as markdown, as the PR bot posts it and `ci-tool report` prints it.

headline: overall state and totals
per stage: result, duration, counts (stages not run: why; reused stages: the run they passed in)
failed tests grouped by failure signature, each group with its tests and the first lines of output of its
  first test
failures of tests known to be flaky on that GPU type before the run, apart, each with its measured rate: an
  author sees at once which red is theirs
reruns of known flaky failures and their outcome; waives applied, by reason
list entries that collected nothing
"""

from __future__ import annotations

from collections import defaultdict

from ci_tool.errors import CiToolError
from ci_tool.history import queries
from ci_tool.history.reuse_sources import reused_test_origin
from ci_tool.history.store import StageRecord
from ci_tool.markdown_safe import code, code_block, code_cell
from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.perf.report_lines import perf_section
from ci_tool.report.model import CiReport, FailedTest
from ci_tool.report.words import (
    KNOWN_FLAKY_NOTE,
    KNOWN_FLAKY_TITLE,
    counted,
    failures_title,
    known_flaky_words,
    seconds_text,
    totals_words,
)
from ci_tool.stages.modes import RAN_ALONE
from ci_tool.stages.names import parse_stage_name


def render_markdown(report: CiReport) -> str:
    run = report.run
    lines = [
        f"## ci-tool run {code(run.run_id)}: **{run.state.words(report.waiting)}**",
        "",
        f"{code(run.command)} · {counted(len(report.stages), 'stage')} · {totals_words(report)}",
        "",
    ]
    return "\n".join(lines + report_sections(report)) + "\n"


def report_sections(report: CiReport) -> list[str]:
    """The report's lines below its headline: the stage table, failures grouped by signature, reruns,
    waives, stages not run and why, list entries that collected nothing (the bot's CI report reuses them)."""
    lines = [
        "| Stage | Result | Duration | Passed | Failed | Skipped |",
        "|---|---|---|---:|---:|---:|",
    ]
    for s in report.stages:
        if s.state.ran:
            result = f"**{s.state}**" + (f" ({code_cell(s.reason)})" if s.reason else "") + _alone(s.name)
            counts = f"{seconds_text(s.duration_seconds)} | {s.passed} | {s.failed} | {s.skipped}"
            lines.append(f"| {code_cell(s.name)} | {result} | {counts} |")
        elif s.state is StageState.REUSED:
            lines.append(f"| {code_cell(s.name)} | {s.state} ({code_cell(s.reason)}) | – | – | – | – |")
        else:
            lines.append(f"| {code_cell(s.name)} | {s.state} | – | – | – | – |")
    lines += _prediction_section(report)
    lines += _failure_section(report) + _known_flaky_section(report)
    lines += perf_section(report.perf, dict(report.quiet_needed))
    lines += _rerun_section(report) + _waive_section(report)
    return lines + _reused_section(report) + _not_run_section(report) + _uncollected_section(report)


def _alone(stage: str) -> str:
    """`, ran alone` for a stage whose mode keeps other stages off its host (every executor enforces it)."""
    try:
        return f", {RAN_ALONE}" if parse_stage_name(stage).policy.runs_alone else ""
    except CiToolError:  # a stage recorded under a name from elsewhere: nothing to say
        return ""


def _predicted(stage: StageRecord) -> float | None:
    value = stage.details.get(queries.PREDICTED_SECONDS)
    return float(value) if isinstance(value, int | float) and value > 0 and stage.state.ran else None


def _prediction_section(report: CiReport) -> list[str]:
    """Predicted against actual seconds per stage that ran, and each sharded family's slowest shard over
    its fastest: how well the durations (tests and per-process costs) balance the shards."""
    ran = [(stage, predicted) for stage in report.stages if (predicted := _predicted(stage)) is not None]
    if not ran:
        return []
    lines = ["", "### Shards: predicted and actual", "", "| Stage | Predicted | Actual | Actual / predicted |"]
    lines.append("|---|---:|---:|---:|")
    families: dict[str, list[float]] = defaultdict(list)
    for stage, predicted in ran:
        ratio = stage.duration_seconds / predicted
        actual = seconds_text(stage.duration_seconds)
        lines.append(f"| {code_cell(stage.name)} | {seconds_text(predicted)} | {actual} | {ratio:.2f} |")
        families[queries.stage_family(stage.name)].append(stage.duration_seconds)
    spreads = [(family, max(found), min(found)) for family, found in families.items() if len(found) > 1]
    if spreads:
        lines.append("")
    for family, slowest, fastest in spreads:
        spread = f"{slowest / fastest:.2f}x" if fastest > 0 else "-"
        shards = f"slowest shard {seconds_text(slowest)}, fastest {seconds_text(fastest)} ({spread})"
        lines.append(f"- {code(family)}: {shards}")
    return lines


def _failure_section(report: CiReport) -> list[str]:
    if not report.failures:
        return []
    count = sum(len(g.tests) for g in report.failures)
    signatures = counted(len(report.failures), "signature")
    lines = ["", f"### {failures_title(report)}: {counted(count, 'test')}, {signatures}"]
    for group in report.failures:
        lines += ["", f"#### {code(group.signature)} ({counted(len(group.tests), 'test')})", ""]
        lines += [_failed_line(test) for test in group.tests]
        excerpt = group.tests[0].excerpt or group.tests[0].message
        if excerpt:
            lines += ["", *code_block("\n".join(excerpt.splitlines())).splitlines()]
    return lines


def _known_flaky_section(report: CiReport) -> list[str]:
    if not report.known_flaky:
        return []
    lines = [
        "",
        f"### {KNOWN_FLAKY_TITLE}: {counted(len(report.known_flaky), 'test')}",
        "",
        f"_{KNOWN_FLAKY_NOTE}._",
        "",
    ]
    for test in report.known_flaky:
        assert test.flake is not None  # the section holds only known flaky failures
        signature = f", {code(test.flake.signature)}" if test.flake.signature else ""
        lines.append(f"{_failed_line(test)}: {known_flaky_words(test.flake)}{signature}")
    return lines


def _failed_line(test: FailedTest) -> str:
    return f"- {code(test.test_id)} in {code(test.stage)}" + (" (error)" if test.outcome is TestOutcome.ERROR else "")


def _rerun_section(report: CiReport) -> list[str]:
    if not report.reruns:
        return []
    lines = ["", "### Reruns of known flaky failures", ""]
    for rerun in report.reruns:
        verdict = "passed on rerun (unstable, not green)" if rerun.outcome is TestOutcome.PASSED else "failed again"
        test, signature = code(rerun.test_id), code(rerun.signature)
        lines.append(f"- {test} in {code(rerun.stage)}: {signature}, {verdict}")
    return lines


def _waive_section(report: CiReport) -> list[str]:
    if not report.waives:
        return []
    total = sum(len(ids) for _, ids in report.waives)
    lines = ["", f"### Waives applied: {counted(total, 'test')}", ""]
    for reason, ids in report.waives:
        if reused_test_origin(reason) is not None:  # tests that passed with the same code: a count says it
            lines.append(f"- {code(reason)}: {counted(len(ids), 'test')} that passed there")
        else:
            lines.append(f"- {code(reason)}: " + ", ".join(code(test_id) for test_id in ids))
    return lines


def _reused_section(report: CiReport) -> list[str]:
    reused = [s for s in report.stages if s.state is StageState.REUSED]
    if not reused:
        return []
    lines = ["", "### Stages reused (passed in an earlier run of the same code; not run again)", ""]
    return lines + [f"- {code(s.name)}{_because(s.reason)}" for s in reused]


def _not_run_section(report: CiReport) -> list[str]:
    not_run = [s for s in report.stages if not s.state.ran and s.state is not StageState.REUSED]
    if not not_run:
        return []
    return ["", "### Stages not run", ""] + [f"- {code(s.name)}: {s.state.words}{_because(s.reason)}" for s in not_run]


def _uncollected_section(report: CiReport) -> list[str]:
    if not report.uncollected:
        return []
    lines = ["", "### List entries that collected nothing", ""]
    return lines + [f"- {code(u.entry_id)} in {code(u.stage)}{_because(u.reason)}" for u in report.uncollected]


def _because(reason: str) -> str:
    """`: ` and the reason in a code span (it may quote the PR's files), or nothing for no reason."""
    return f": {code(reason)}" if reason else ""
