"""The CI report the bot posts when a Jenkins build it started has ended. Pure: the build, the test
reports of the L0_Test builds it started, and the plan in; markdown out.

Test cases belong to the stage their class name starts with (ci-tool's JUnit prefixes it, junit.py), or to
the stage a later attempt of which it names (`<stage>-attempt-2`: the pipeline ran the stage again after the
infrastructure lost it); the report shows the latest attempt with results under its name, unstable if it passed. The
stage table, failures grouped by signature and the stages not run are report/report_markdown.py's sections over
StageRecords made from the cases; above them: the result with links to the build and each L0_Test build's
console, "Partly Tested" for a custom run, a newer run that killed this one, what of the build could not be
read, and the stages where the bot's preview and the run differ.

The stages are the run's: its archived run record (selection.json, stages/record.py), so a stage the preview
did not name still gets its test cases. Only a build that archived none falls back to the preview's.

The perf section (report/report_markdown.py's, as in `ci-tool report`) reads each case's `ci_tool.perf` JUnit property
(perf/transport.py), not the history: a Jenkins build records its history on the agent that ran it, where
the bot cannot read it, while the test report, properties kept (`keepProperties: true`), is what Jenkins
serves of every build, local or Slurm-run. The verdicts are the ones the stage gated with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ci_tool.bot.run_plan import RunPlan
from ci_tool.bot.status import counts
from ci_tool.dispatch.model import Build, JenkinsCase
from ci_tool.errors import StageError
from ci_tool.history.flakiness import KnownFlaky
from ci_tool.history.perf_results import PerfResult
from ci_tool.history.store import RunRecord, StageRecord, TestRecord
from ci_tool.markdown_safe import code
from ci_tool.outcomes import COUNTED, BuildResult, RunState, StageState, TestOutcome
from ci_tool.perf.transport import PERF_PROPERTY, from_property
from ci_tool.report.model import CiReport, build_report
from ci_tool.report.report_markdown import report_sections
from ci_tool.run.signatures import failure_excerpt, failure_signature
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.record import SelectionRecord, differences

NO_RESULTS = "no test results: it did not start (fail-fast, an abort, or an earlier failure)"
RETRIED = "attempt {attempt}: run again after the infrastructure lost attempt {lost} (its agent or runner)"
Downstream = tuple[tuple[Build, tuple[JenkinsCase, ...]], ...]  # each stage's build or job, with its test cases


@dataclass(frozen=True)
class FinishedBuild:
    """A build that ended, the L0_Test builds it started with their test cases, the newer build that
    killed it (None when none did), its run record (None: it archived none that could be read) and what of
    it could not be read."""

    build: Build
    downstream: Downstream = ()
    newer: Build | None = None
    record: SelectionRecord | None = None
    unread: tuple[str, ...] = ()

    @property
    def cases(self) -> tuple[JenkinsCase, ...]:
        return tuple(case for _, cases in self.downstream for case in cases)


def stage_of(case: JenkinsCase, stages: Sequence[str]) -> str | None:
    """The stage a case ran in: the one its class name starts with (`A10-PyTorch-1.tests.a.TestC`)."""
    return next((stage for stage in stages if case.class_name.startswith(stage + ".")), None)


def attempt_of(case: JenkinsCase, stages: Sequence[str]) -> tuple[str, str] | None:
    """The stage a case ran in and the name it ran under: the stage's own, or a later attempt's, run again
    after the infrastructure lost the earlier one (`A10-PyTorch-1-attempt-2.tests.a.TestC`)."""
    stage = stage_of(case, stages)
    if stage is not None:
        return stage, stage
    head = case.class_name.partition(".")[0]  # a stage name holds no "." (NAME_CHARSET)
    try:
        parsed = parse_stage_name(head)
    except StageError:
        return None
    return (parsed.first_attempt, head) if parsed.attempt is not None and parsed.first_attempt in stages else None


def _latest_attempts(cases: Sequence[JenkinsCase], stages: Sequence[str]) -> dict[str, str]:
    """Each stage's name on its latest attempt with results (a lost attempt may have left some)."""
    latest: dict[str, tuple[int, str]] = {}
    for case in cases:
        found = attempt_of(case, stages)
        if found is not None:
            stage, ran = found
            number = _attempt(ran) or 1
            latest[stage] = max(latest.get(stage, (0, stage)), (number, ran))
    return {stage: ran for stage, (_, ran) in latest.items()}


def _test_record(case: JenkinsCase, stage: str) -> TestRecord:
    rest = case.class_name[len(stage) + 1 :]
    signature = str(failure_signature("", case.message, case.output)) if case.outcome.is_failure else ""
    return TestRecord(
        test_id=f"{rest}::{case.name}" if rest else case.name,
        outcome=case.outcome,
        duration_seconds=case.duration_seconds,
        message=case.message,
        signature=signature,
        output_head=failure_excerpt(case.output) if case.output else "",
    )


def ci_report(finished: FinishedBuild, plan: RunPlan, *, command: str, known: KnownFlaky | None = None) -> CiReport:
    """The report (report/model.py) of a finished build: one stage per planned stage (blocked ones too);
    failures of the `known` flaky tests are shown apart, with their rate."""
    selection = plan.selection
    names = list(run_stages(finished, plan))
    post_merge = {name: _post_merge(name) for name in names}
    run_id = f"{finished.build.job} #{finished.build.number}"
    ran_as = {name: name for name in names} | _latest_attempts(finished.cases, names)
    tests: dict[str, list[TestRecord]] = {ran: [] for ran in ran_as.values()}
    perf: list[PerfResult] = []
    for case in finished.cases:
        found = attempt_of(case, names)
        if found is not None and ran_as[found[0]] == found[1]:  # the latest attempt's cases alone
            stage = found[1]
            record = _test_record(case, stage)
            tests[stage].append(record)
            if PERF_PROPERTY in case.properties:
                perf += from_property(case.properties[PERF_PROPERTY], run_id=run_id, stage=stage,
                                      test_id=record.test_id, post_merge=post_merge[found[0]])  # fmt: skip
    blocked = (
        dict(finished.record.blocked)
        if finished.record is not None
        else {b.stage.name.name: b.label for b in selection.blocked}
    )
    stages = [_stage(run_id, ran_as[name], tests[ran_as[name]], blocked.get(name)) for name in names]
    result = finished.build.result
    run = RunRecord(run_id, command, result.run_state if result else RunState.FAILED, 0.0)
    return build_report(run, stages, tests, perf=perf, known=known)


def run_stages(finished: FinishedBuild, plan: RunPlan) -> tuple[str, ...]:
    """The stages of the run, started or blocked: its record's, else (none archived) the preview's."""
    if finished.record is not None:
        return finished.record.names
    return tuple(stage.name.name for stage in plan.selection.selected)


def _post_merge(name: str) -> bool:
    try:
        return parse_stage_name(name).post_merge
    except StageError:  # a record naming a stage ci-tool cannot parse: its perf results gate as pre-merge
        return False


def _attempt(name: str) -> int | None:
    """The attempt a stage name carries (`-attempt-2`), None for none or a name ci-tool cannot parse."""
    try:
        return parse_stage_name(name).attempt
    except StageError:
        return None


def _stage(run_id: str, name: str, tests: Sequence[TestRecord], label: str | None) -> StageRecord:
    if label is not None:
        return StageRecord(run_id, name, StageState.SKIPPED, reason=f"blocked until the label {label!r}")
    if not tests:
        return StageRecord(run_id, name, StageState.SKIPPED, reason=NO_RESULTS)
    tally = {outcome: sum(1 for t in tests if t.final_outcome.counted_as is outcome) for outcome in COUNTED}
    failed = tally[TestOutcome.FAILED] > 0
    attempt = _attempt(name)
    # a pass on a later attempt is unstable, as the stage's own result says (run/stage_runner.py)
    state = StageState.FAILED if failed else StageState.UNSTABLE if attempt else StageState.PASSED
    return StageRecord(
        run_id,
        name,
        state,
        reason=RETRIED.format(attempt=attempt, lost=(attempt or 1) - 1) if attempt else "",
        duration_seconds=sum(t.duration_seconds for t in tests),
        passed=tally[TestOutcome.PASSED],
        failed=tally[TestOutcome.FAILED],
        skipped=tally[TestOutcome.SKIPPED],
    )


def passed_after_retries(finished: FinishedBuild, report: CiReport) -> bool:
    """Whether a run GitHub failed only because runners were lost: every stage of its report passed, at least
    one on a later attempt (`<stage>-attempt-2`). A lost runner's job stays failed on GitHub whatever its retry
    did; the run is then unstable, as a Jenkins build whose stage passed on a fresh agent."""
    return (
        finished.build.result is BuildResult.FAILURE
        and bool(report.stages)
        and all(stage.state in (StageState.PASSED, StageState.UNSTABLE) for stage in report.stages)
        and any(_attempt(stage.name) for stage in report.stages)
    )


def totals(report: CiReport) -> Mapping[TestOutcome, int]:
    return {TestOutcome(key): value for key, value in report.totals.items()}


def render_ci_report(
    finished: FinishedBuild, plan: RunPlan, report: CiReport, *, login: str, html_report: str | None = None
) -> str:
    """The markdown of the final CI report comment (`report`: ci_report of the same build and plan;
    `html_report`: where the build's HTML report is published, when that is configured)."""
    build = finished.build
    command = report.run.command
    result = build.result.value if build.result else "ENDED"
    lines = [
        f"## CI report: [{build.job} #{build.number}]({build.url}) **{result}**",
        "",
        f"@{login}, {code(command)} ended: {counts(totals(report))}.",
        "",
    ]
    if finished.newer is not None:
        lines += [f"Killed by a newer pipeline run: [build {finished.newer.number}]({finished.newer.url}).", ""]
    if plan.selection.custom_run:
        flags = ", ".join(f"`{found.name}`" for found in plan.selection.request.given if found.custom_run)
        lines += [
            f"**Partly Tested**: a custom run ({flags}) selects part of the stages; it does not turn the merge "
            "gate green.",
            "",
        ]
    if finished.unread:
        lines += ["**Could not be read**, so the counts may be partial: " + "; ".join(finished.unread) + ".", ""]
    if finished.record is None:
        lines += ["The build archived no readable run record: the stages below are the bot's preview.", ""]
    else:
        added, dropped = differences([stage.name.name for stage in plan.selection.selected], finished.record)
        if added or dropped:
            parts = [f"the run also started {', '.join(map(code, added))}" if added else "",
                     f"it did not start {', '.join(map(code, dropped))}" if dropped else ""]  # fmt: skip
            lines += ["**The run differs from the preview**: " + "; ".join(filter(None, parts)) + ".", ""]
    logs = [f"[{build.job} #{build.number}]({build.console_url})"]
    logs += [f"[{down.job} #{down.number}]({down.console_url})" for down, _ in finished.downstream]
    lines += ["Logs: " + " · ".join(logs), ""]
    if html_report is not None:
        lines += [f"HTML report: [{build.job} #{build.number}]({html_report})", ""]
    return "\n".join(lines + report_sections(report)) + "\n"
