"""The CI report of a run, as the PR bot posts it (markdown) or as JSON, built from the history.

overall state and totals
per stage: result, duration, counts (stages not run: why; reused stages: the run they passed in)
failed tests grouped by failure signature (exception type + normalized message), each group with
  its tests and the first lines of output of its first test
failures of tests known to be flaky on that GPU type before the run (history/flakiness.py), apart,
  each with its measured rate: an author sees at once which red is theirs
reruns of known flaky failures and their outcome; waives applied, by reason
list entries that collected nothing
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ci_tool.errors import CiToolError
from ci_tool.history import queries
from ci_tool.history.flakiness import FlakeStats, KnownFlaky, known_flaky, stage_devices
from ci_tool.history.perf_results import PerfResult, run_perf_results
from ci_tool.history.reuse import reused_test_origin
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.markdown import code, code_block, code_cell
from ci_tool.outcomes import COUNTED, RunState, StageState, TestOutcome
from ci_tool.perf.report_lines import perf_section
from ci_tool.stages.modes import RAN_ALONE
from ci_tool.stages.names import parse_stage_name


@dataclass(frozen=True)
class FailedTest:
    stage: str
    test_id: str
    outcome: TestOutcome  # the final outcome: failed or error
    kind: str
    message: str
    excerpt: str
    flake: FlakeStats | None = None  # how flaky it was known to be before the run; None: a new failure


@dataclass(frozen=True)
class FailureGroup:
    signature: str
    tests: tuple[FailedTest, ...]


@dataclass(frozen=True)
class CiReport:
    run: RunRecord
    stages: tuple[StageRecord, ...]
    failures: tuple[FailureGroup, ...]  # biggest group first
    reruns: tuple[Mapping[str, object], ...]  # stage, test_id, signature, rerun
    waives: tuple[tuple[str, tuple[str, ...]], ...]  # reason, waived test ids
    uncollected: tuple[Mapping[str, object], ...]  # stage, id, reason
    perf: tuple[PerfResult, ...] = ()  # the run's perf-sanity results (the history's perf_results)
    known_flaky: tuple[FailedTest, ...] = ()  # failures of known flaky tests (not in `failures`)

    @property
    def totals(self) -> dict[str, int]:
        return {key: sum(getattr(s, key) for s in self.stages) for key in COUNTED}

    @property
    def waiting(self) -> int:
        return sum(1 for stage in self.stages if stage.state is StageState.WAITING)


def load_report(store: HistoryStore, run_id: str) -> CiReport:
    run = queries.get_run(store, run_id)
    stages = queries.run_stages(store, run_id)
    tests = {stage.name: queries.stage_tests(store, run_id, stage.name) for stage in stages}
    perf = run_perf_results(store, run_id)
    known = known_flaky(store, before=run.started_at, test_ids=failed_test_ids(tests))
    return build_report(run, stages, tests, perf=perf, known=known)


def failed_test_ids(tests: Mapping[str, Sequence[TestRecord]]) -> set[str]:
    """The tests that stayed red in a run (per stage): the only ones its report asks known_flaky about."""
    return {test.test_id for found in tests.values() for test in found if test.final_outcome.is_failure}


def build_report(
    run: RunRecord,
    stages: Sequence[StageRecord],
    tests: Mapping[str, Sequence[TestRecord]],
    *,
    perf: Sequence[PerfResult] = (),
    known: KnownFlaky | None = None,
) -> CiReport:
    """The report of a run; `known`: the tests known flaky before it, by (test id, GPU type)."""
    groups: dict[str, list[FailedTest]] = defaultdict(list)
    flaky: list[FailedTest] = []
    waives: dict[str, list[str]] = defaultdict(list)
    for stage in stages:
        gpu = stage_devices(stage.name).gpu
        for test in tests.get(stage.name, ()):
            if test.final_outcome.is_failure:
                flake = (known or {}).get((test.test_id, gpu))
                failed = FailedTest(
                    stage.name, test.test_id, test.final_outcome, test.kind, test.message, test.output_head, flake
                )
                if flake is not None:
                    flaky.append(failed)
                else:
                    groups[test.signature or test.kind or "Failure"].append(failed)
            if test.waive_reason is not None:
                waives[test.waive_reason].append(test.test_id)
    failures = sorted((FailureGroup(sig, tuple(found)) for sig, found in groups.items()), key=_group_order)
    reruns = tuple({"stage": s.name, **r} for s in stages for r in _details_list(s, "reruns"))
    uncollected = tuple({"stage": s.name, **u} for s in stages for u in _details_list(s, "uncollected"))
    return CiReport(
        run,
        tuple(stages),
        tuple(failures),
        reruns,
        tuple((r, tuple(ids)) for r, ids in waives.items()),
        uncollected,
        tuple(perf),
        tuple(flaky),
    )


def _group_order(group: FailureGroup) -> tuple[int, str]:
    return -len(group.tests), group.signature


def _details_list(stage: StageRecord, key: str) -> list[Mapping[str, object]]:
    found = stage.details.get(key, [])
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []


def report_json(report: CiReport) -> dict[str, object]:
    run = report.run
    return {
        "run_id": run.run_id,
        "command": run.command,
        "state": run.state,
        "started_at": run.started_at,
        "duration_seconds": _run_seconds(run),
        "totals": report.totals,
        "stages": [_stage_json(s) for s in report.stages],
        "failures": [{"signature": g.signature, "tests": [_failed_json(t) for t in g.tests]} for g in report.failures],
        "known_flaky": [_failed_json(t) for t in report.known_flaky],
        "reruns": [dict(r) for r in report.reruns],
        "waives": [{"reason": reason, "tests": list(ids)} for reason, ids in report.waives],
        "uncollected": [dict(u) for u in report.uncollected],
    }


def _failed_json(test: FailedTest) -> dict[str, object]:
    fields = {f.name: getattr(test, f.name) for f in dataclasses.fields(test) if f.name != "flake"}
    if test.flake is None:
        return fields
    flake = test.flake
    known = {"rate": round(flake.rate, 4), "flaky_runs": flake.flaky_runs, "runs": flake.runs, "gpu": flake.gpu}
    return {**fields, "known_flaky": known}


def _stage_json(stage: StageRecord) -> dict[str, object]:
    keys = ("name", "state", "reason", "duration_seconds", "passed", "failed", "skipped", "results_dir")
    return {key: getattr(stage, key) for key in keys}


def _run_seconds(run: RunRecord) -> float | None:
    return round(run.finished_at - run.started_at, 3) if run.finished_at is not None else None


def seconds_text(value: float) -> str:
    """`12.5 s`, `3 min 20 s`."""
    minutes, seconds = divmod(value, 60)
    return f"{int(minutes)} min {seconds:.0f} s" if minutes else f"{seconds:.1f} s"


def run_state_words(state: RunState, waiting: int) -> str:
    """A run's state for people: a pending run is green here, with stages left for CI's runners."""
    if state is RunState.PENDING:
        return f"passed here, {waiting} stage{'s' if waiting != 1 else ''} waiting for a runner"
    return state.value


def render_markdown(report: CiReport) -> str:
    run, totals = report.run, report.totals
    took = _run_seconds(run)
    lines = [
        f"## ci-tool run {code(run.run_id)}: **{run_state_words(run.state, report.waiting)}**",
        "",
        f"{code(run.command)} · {counted(len(report.stages), 'stage')} · {totals['passed']} passed, "
        f"{totals['failed']} failed, {totals['skipped']} skipped"
        + (f" · {seconds_text(took)}" if took is not None else ""),
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
    lines += _failure_section(report) + _known_flaky_section(report) + perf_section(report.perf)
    lines += _rerun_section(report) + _waive_section(report)
    return lines + _reused_section(report) + _not_run_section(report) + _uncollected_section(report)


def _alone(stage: str) -> str:
    """`, ran alone` for a stage whose mode keeps other stages off its host (every executor enforces it)."""
    try:
        return f", {RAN_ALONE}" if parse_stage_name(stage).policy.runs_alone else ""
    except CiToolError:  # a stage recorded under a name from elsewhere: nothing to say
        return ""


def counted(count: int, noun: str) -> str:
    """`1 test`, `3 tests`."""
    return f"{count} {noun}" + ("s" if count != 1 else "")


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


def failures_title(report: CiReport) -> str:
    """`Failures`, or `New failures` beside failures of known flaky tests."""
    return "New failures" if report.known_flaky else "Failures"


KNOWN_FLAKY_TITLE = "Failures of known flaky tests"
KNOWN_FLAKY_NOTE = "flaky on the same GPU type before this run: likely not caused by this change"


def known_flaky_words(flake: FlakeStats) -> str:
    """`flake rate 33% (1 of 3 runs on A10)`."""
    return f"flake rate {flake.rate_text()}"


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
        verdict = "passed on rerun (unstable, not green)" if rerun.get("rerun") == "passed" else "failed again"
        test, signature = code(rerun.get("test_id")), code(rerun.get("signature"))
        lines.append(f"- {test} in {code(rerun.get('stage'))}: {signature}, {verdict}")
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
    return lines + [
        f"- {code(u.get('id'))} in {code(u.get('stage'))}{_because(str(u.get('reason') or ''))}"
        for u in report.uncollected
    ]


def _because(reason: str) -> str:
    """`: ` and the reason in a code span (it may quote the PR's files), or nothing for no reason."""
    return f": {code(reason)}" if reason else ""
