"""Run one planned stage: pytest processes, resume after a crash, one rerun of known flaky failures,
and the stage's results folder.

    results_dir/                  (.ci-tool/runs/<run id>/<stage>/)
      rendered.txt  shard.txt     the context's render and this stage's lines
      lists/                      the list (and node-id) files each process read
      parts/<label>.junit.part|.log|...  per process: streamed JUnit, log, events, collection report
      junit.xml                   the stage's merged, stage-prefixed JUnit
      result.json                 state, counts, uncollected entries, the processes and their commands
      perf-snapshot.json          what its perf cases read of the history; parts/<label>.perf.jsonl what
                                  they hand back (written and read by the session: perf/handoff.py)

Processes: the regular lines in one, each ISOLATION line in its own. When a process dies in a test (a
hang stopped by pytest-timeout, a crash), that test is recorded as a timeout or crash and a new process
runs the tests it had not reached. Failures whose output matches a known flaky signature run once
more; a pass then makes the stage unstable, not green. So does a pass of a later attempt of a stage
(`<stage>-attempt-A`), run again because the infrastructure lost the earlier one.

A results folder that fills up or turns read-only stops the stage (failed, with the tests that
finished): its junit.xml and result.json go to a fallback folder, and its reason says where
(ci_tool.run.results_folder).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ci_tool.history.reuse_sources import reused_test_origin
from ci_tool.interrupts import CTRL_C
from ci_tool.outcomes import COUNTED, StageState, TestOutcome
from ci_tool.run import junit, results_folder
from ci_tool.run.flaky import match_flaky
from ci_tool.run.invocation import (
    Attempt,
    PytestInvocation,
    RunSettings,
    isolated_file,
    lists_dir,
    next_attempt,
    planned_invocations,
    priority_file,
)
from ci_tool.run.process import EventSink, ProcessOutcome, run_pytest_process, write_nodeids
from ci_tool.stages.stage_plan import StagePlan
from ci_tool.testdb.lines import TestLine

FLAKY_PROPERTY = "ci_tool.flaky_signature"
FIRST_FAILURE_PROPERTY = "ci_tool.first_failure"
MAX_RESUMES = 50  # each resume skips at least the test the last process died in


@dataclass(frozen=True)
class TestResult:
    """One test of a stage: its first attempt and, for a known flaky failure, its one rerun."""

    __test__ = False  # not a pytest test class despite the name

    first: junit.CaseResult
    rerun: junit.CaseResult | None = None
    flaky: str | None = None  # the name of the flaky signature that earned the rerun
    log_file: Path | None = None  # the log of the process that ran the first attempt

    @property
    def final(self) -> junit.CaseResult:
        if self.rerun is None:
            return self.first
        case = self.rerun.with_property(junit.RERUN_PROPERTY, self.rerun.outcome)
        case = case.with_property(FLAKY_PROPERTY, self.flaky or "")
        return case.with_property(FIRST_FAILURE_PROPERTY, self.first.message)

    @property
    def passed_on_rerun(self) -> bool:
        return self.rerun is not None and self.rerun.outcome is TestOutcome.PASSED


@dataclass(frozen=True)
class StageResult:
    stage: str
    state: StageState  # passed, failed, unstable or interrupted
    reason: str  # why the stage failed without a failing test, else ""
    tests: tuple[TestResult, ...]
    uncollected: tuple[Mapping[str, object], ...]
    processes: tuple[ProcessOutcome, ...]
    started_at: float
    duration_seconds: float
    results_dir: Path
    details: Mapping[str, object] = field(default_factory=dict)  # what its executor adds (Slurm: its jobs)
    predicted_seconds: float = 0.0  # what planning predicted for the stage (the report sets them side by side)
    kept_in: Path | None = None  # where junit.xml and result.json went when results_dir refused them

    @property
    def files_dir(self) -> Path:
        """The folder holding the stage's junit.xml and result.json."""
        return self.kept_in or self.results_dir

    @property
    def counts(self) -> dict[TestOutcome, int]:
        """Final outcomes per column (COUNTED: errors count as failures)."""
        counts = dict.fromkeys(COUNTED, 0)
        for test in self.tests:
            counts[test.final.outcome.counted_as] += 1
        return counts


@dataclass
class _BatchRun:
    """One batch's first process (the template of its resumes and rerun) and the results so far."""

    first: PytestInvocation
    tests: list[TestResult] = field(default_factory=list)

    @property
    def list_file(self) -> Path:
        return self.first.list_file


def run_stage(plan: StagePlan, settings: RunSettings, *, on_event: EventSink | None = None) -> StageResult:
    """Run a planned stage and write its results folder."""
    started_at, clock = time.time(), time.monotonic()
    sink = on_event or (lambda event: None)
    processes: list[ProcessOutcome] = []
    batches: list[_BatchRun] = []
    refusal: str | None = None
    try:
        interrupted = _run_batches(plan, settings, batches, processes, sink)
    except results_folder.FolderRefused as refused:
        interrupted, refusal = True, refused.strerror
    tests = tuple(test for batch in batches for test in batch.tests)
    uncollected = _uncollected(processes)
    state, reason = _state(tests, processes, interrupted) if plan.lines or not plan.rendered else _empty_shard(plan)
    state, reason = _on_a_later_attempt(plan, state, reason)
    result = StageResult(
        plan.name.name, state, reason, tests, uncollected, tuple(processes), started_at, time.monotonic() - clock,
        settings.results_dir, predicted_seconds=plan.predicted_seconds,
    )  # fmt: skip
    return write_stage_files(result, plan, settings.run_id, refusal=refusal)


def _run_batches(
    plan: StagePlan, settings: RunSettings, batches: list[_BatchRun], processes: list[ProcessOutcome], sink: EventSink
) -> bool:
    """Every batch, then the rerun of known flaky failures; True when interrupted. A write the results
    folder refuses raises FolderRefused (the tests that finished are in `batches`)."""
    folder = settings.results_dir
    try:
        lists_dir(settings).mkdir(parents=True, exist_ok=True)
        _write_lines(folder / "rendered.txt", plan.rendered)
        _write_lines(folder / "shard.txt", plan.lines)
        if plan.isolated:
            _write_lines(isolated_file(settings), plan.isolated)
        if plan.priority.test_ids:
            write_nodeids(priority_file(settings), list(plan.priority.test_ids))
        for first in planned_invocations(plan, settings):
            _write_lines(first.list_file, first.batch.lines)
            batch = _BatchRun(first)
            batches.append(batch)
            if _run_batch(settings, batch, processes, sink):
                return True
        return settings.rerun_flaky and _rerun_flaky(settings, batches, processes, sink)
    except OSError as error:
        why = results_folder.refused(error)
        if why is None:
            raise
        raise results_folder.FolderRefused(why) from None


def write_stage_files(
    result: StageResult, plan: StagePlan, run_id: str, *, refusal: str | None = None
) -> StageResult:
    """Write the stage's junit.xml and result.json into its folder, or, when the folder refuses them (or
    refused a write earlier: `refusal`), into a fallback folder: the stage then fails, and says
    where its results are."""

    def files(line: str) -> dict[str, str]:
        shown = _refused(result, line, None) if line else result
        return {
            "junit.xml": junit.junit_document(shown.stage, [test.final for test in shown.tests]),
            "result.json": json.dumps(result_json(shown, plan), indent=1) + "\n",
        }

    kept = results_folder.write_results(result.results_dir, files, run_id=run_id, stage=result.stage, why=refusal)
    return result if kept is None else _refused(result, kept.line, kept.kept_in)


def _refused(result: StageResult, line: str, kept_in: Path | None) -> StageResult:
    # failed, not interrupted: nobody stopped the run (exit 1, not the 130 of a signal), and nothing passed
    # that could be reused
    return replace(result, state=StageState.FAILED, reason=line, kept_in=kept_in)


def _launch(
    invocation: PytestInvocation, settings: RunSettings, processes: list[ProcessOutcome], sink: EventSink
) -> ProcessOutcome:
    outcome = run_pytest_process(
        invocation,
        python=settings.python,
        rootdir=settings.rootdir,
        on_event=sink,
        interrupt_grace_seconds=settings.interrupt_grace_seconds,
    )
    processes.append(outcome)
    return outcome


def _run_batch(settings: RunSettings, batch: _BatchRun, processes: list[ProcessOutcome], sink: EventSink) -> bool:
    """Run a batch, resuming after each process that died in a test; True when interrupted."""
    done: list[str] = []
    invocation = replace(batch.first, sequence=len(processes) + 1)
    for _ in range(MAX_RESUMES + 1):
        outcome = _launch(invocation, settings, processes, sink)
        refusal = _folder_refusal(outcome)
        finished = [*outcome.cases, *([_unfinished(outcome.unfinished, refusal)] if outcome.unfinished else [])]
        batch.tests.extend(TestResult(case, log_file=outcome.log_file) for case in finished)
        done.extend(case.nodeid for case in finished)
        if refusal is not None:
            raise results_folder.FolderRefused(refusal)
        if outcome.interrupted:
            return True
        if outcome.completed or outcome.unfinished is None or outcome.collected is None:
            return False
        if not set(outcome.collected) - set(done):
            return False
        done_file = write_nodeids(batch.list_file.with_suffix(".done.txt"), done)
        invocation = next_attempt(batch.first, len(processes) + 1, Attempt.RESUME, exclude_nodeids=done_file)
    return False


def _rerun_flaky(
    settings: RunSettings, batches: list[_BatchRun], processes: list[ProcessOutcome], sink: EventSink
) -> bool:
    """Rerun once the failures that match a known flaky signature; True when interrupted."""
    for batch in batches:
        flaky = {
            t.first.nodeid: sig.name for t in batch.tests if (sig := match_flaky(t.first, settings.flaky_signatures))
        }
        if not flaky:
            continue
        only = write_nodeids(batch.list_file.with_suffix(".rerun.txt"), list(flaky))
        invocation = next_attempt(batch.first, len(processes) + 1, Attempt.RERUN, only_nodeids=only)
        outcome = _launch(invocation, settings, processes, sink)
        refusal = _folder_refusal(outcome)
        ended = [*outcome.cases, *([_unfinished(outcome.unfinished, refusal)] if outcome.unfinished else [])]
        reruns = {c.nodeid: c for c in ended}
        for index, test in enumerate(batch.tests):
            if test.first.nodeid in flaky:
                rerun = reruns.get(test.first.nodeid) or _missing_rerun(test.first, outcome)
                batch.tests[index] = TestResult(test.first, rerun, flaky[test.first.nodeid], test.log_file)
        if refusal is not None:
            raise results_folder.FolderRefused(refusal)
        if outcome.interrupted:
            return True
    return False


def _folder_refusal(outcome: ProcessOutcome) -> str | None:
    """Why the results folder refuses writes, when a process ended before its session did (it may have
    died of a refused write: its JUnit, events or log), else None."""
    if outcome.completed or outcome.interrupted:
        return None
    return results_folder.refusal(outcome.invocation.parts_dir)


def _unfinished(case: junit.CaseResult, refusal: str | None) -> junit.CaseResult:
    """The test a process ended in; when the folder refused writes, its result was lost, not a crash."""
    if refusal is None:
        return case
    return replace(
        case,
        outcome=TestOutcome.SKIPPED,
        message=f"not recorded: the results folder refused its result ({refusal})",
        text="",
        kind=junit.INTERRUPTED_KIND,
    )


def _missing_rerun(first: junit.CaseResult, outcome: ProcessOutcome) -> junit.CaseResult:
    return junit.CaseResult(
        first.nodeid,
        TestOutcome.ERROR,
        message=f"the rerun process ended (exit code {outcome.exit_code}) before running this test",
        kind=junit.CRASH_KIND,
        stage=first.stage,
    )


def _uncollected(processes: Sequence[ProcessOutcome]) -> tuple[Mapping[str, object], ...]:
    """Entries that collected nothing, from each batch's first process (resumes and reruns repeat them)."""
    found: list[Mapping[str, object]] = []
    for outcome in processes:
        if outcome.invocation.attempt is Attempt.FIRST:
            found.extend({**entry, "list": outcome.invocation.batch.name} for entry in outcome.uncollected)
    return tuple(found)


def _reused(test: TestResult) -> bool:
    """Whether the test skipped as reused: it passed on this code in an earlier run, so a stage of such
    skips (and waived ones) did run its tests, only not all here."""
    return reused_test_origin(test.first.prop(junit.WAIVED_PROPERTY)) is not None


def _empty_shard(plan: StagePlan) -> tuple[StageState, str]:
    """A shard past its family's test count (a catalog may keep more shards than tests: shard.plan_shards)
    has nothing to run, and passes saying so."""
    tests = len({line.test_id for line in plan.rendered})
    return StageState.PASSED, (
        f"shard {plan.shard} of {plan.shards} is empty: its family's list holds {tests} test(s) "
        f"for {plan.shards} shards"
    )


def _state(
    tests: Sequence[TestResult], processes: Sequence[ProcessOutcome], interrupted: bool
) -> tuple[StageState, str]:
    if interrupted:
        by = next((p.interrupted_by for p in processes if p.interrupted), CTRL_C)
        return StageState.INTERRUPTED, f"interrupted ({by})"
    broken = [p for p in processes if p.collected is None and p.unfinished is None]
    if broken:
        first = broken[0]
        return (
            StageState.FAILED,
            f"pytest exited with code {first.exit_code} before running tests (see {first.log_file})",
        )
    if not tests:
        return StageState.FAILED, "the stage's list collected no test"
    if all(t.final.outcome is TestOutcome.SKIPPED for t in tests) and not any(map(_reused, tests)):
        why = tests[0].final.message or "no reason given"
        return StageState.FAILED, f"no test ran: all {len(tests)} skipped (the first: {why})"
    failing = [t for t in tests if t.final.is_failure]
    if any(t.final.prop(junit.UNSTABLE_PROPERTY) is None for t in failing):
        return StageState.FAILED, ""
    if failing or any(t.passed_on_rerun for t in tests):
        return StageState.UNSTABLE, ""
    return StageState.PASSED, ""


def _on_a_later_attempt(plan: StagePlan, state: StageState, reason: str) -> tuple[StageState, str]:
    """A stage run again after the infrastructure lost its earlier attempt (`<stage>-attempt-A`, which the
    pipelines run on a fresh agent or runner) is never green: its pass is unstable, and says why."""
    attempt = plan.name.attempt
    if attempt is None or state is not StageState.PASSED:
        return state, reason
    why = f"passed on attempt {attempt}: the infrastructure lost attempt {attempt - 1} (its agent or runner)"
    return StageState.UNSTABLE, why + (f"; {reason}" if reason else "")


def _write_lines(path: Path, lines: Sequence[TestLine]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line.raw + "\n" for line in lines), encoding="utf-8")


def result_json(result: StageResult, plan: StagePlan) -> dict[str, object]:
    """The stage's `result.json`."""
    return {
        "stage": result.stage,
        "state": result.state,
        "reason": result.reason,
        "context": plan.context,
        "shard": plan.shard,
        "shards": plan.shards,
        "query": dict(plan.query),
        "counts": result.counts,
        "duration_seconds": round(result.duration_seconds, 3),
        "uncollected": list(result.uncollected),
        "reruns": [
            {"nodeid": t.first.nodeid, "signature": t.flaky, "rerun": t.rerun.outcome}
            for t in result.tests
            if t.rerun is not None
        ],
        "processes": [
            {
                "label": p.label,
                "command": list(p.command),
                "exit_code": p.exit_code,
                "seconds": round(p.seconds, 3),
                "log": str(p.log_file),
            }
            for p in result.processes
        ],
        **result.details,
    }
