"""Run one planned stage: pytest processes, resume after a crash, one rerun of known flaky failures,
and the stage's results folder.

    results_dir/                  (.ci-tool/runs/<run id>/<stage>/)
      rendered.txt  shard.txt     the context's render and this stage's lines
      lists/                      the list (and node-id) files each process read
      parts/<label>.junit.part|.log|...  per process: streamed JUnit, log, events, collection report
      junit.xml                   the stage's merged, stage-prefixed JUnit
      result.json                 state, counts, uncollected entries, the processes and their commands

Processes: the regular lines in one, each ISOLATION line in its own. When a process dies in a test (a
hang stopped by pytest-timeout, a crash), that test is recorded as a timeout or crash and a new process
runs the tests it had not reached. Failures whose output matches a known flaky signature run once
more; a pass then makes the stage unstable, not green.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ci_tool.atomic import write_text_atomically
from ci_tool.interrupts import CTRL_C
from ci_tool.run import junit
from ci_tool.run.flaky import FlakySignature, match_flaky
from ci_tool.run.process import EventSink, ProcessOutcome, PytestInvocation, run_pytest_process, write_nodeids
from ci_tool.stages.modes import PERF_GATE_ENV
from ci_tool.stages.plan import StagePlan
from ci_tool.testdb.lines import TestLine

PASSED, FAILED, UNSTABLE, INTERRUPTED = "passed", "failed", "unstable", "interrupted"
FLAKY_PROPERTY = "ci_tool.flaky_signature"
FIRST_FAILURE_PROPERTY = "ci_tool.first_failure"
MAX_RESUMES = 50  # each resume skips at least the test the last process died in


@dataclass(frozen=True)
class RunSettings:
    rootdir: Path  # where pytest runs: test ids are relative to it
    results_dir: Path
    run_id: str
    test_timeout_seconds: int = 3600
    flaky_signatures: tuple[FlakySignature, ...] = ()
    rerun_flaky: bool = True
    extra_pytest_args: tuple[str, ...] = ()
    python: str = sys.executable
    interrupt_grace_seconds: float = 10.0


@dataclass(frozen=True)
class TestOutcome:
    """One test of a stage: its first attempt and, for a known flaky failure, its one rerun."""

    __test__ = False  # not a pytest test class despite the name

    first: junit.CaseResult
    rerun: junit.CaseResult | None = None
    flaky: str | None = None  # the name of the flaky signature that earned the rerun

    @property
    def final(self) -> junit.CaseResult:
        if self.rerun is None:
            return self.first
        case = self.rerun.with_property(junit.RERUN_PROPERTY, self.rerun.outcome)
        case = case.with_property(FLAKY_PROPERTY, self.flaky or "")
        return case.with_property(FIRST_FAILURE_PROPERTY, self.first.message)

    @property
    def passed_on_rerun(self) -> bool:
        return self.rerun is not None and self.rerun.outcome == junit.PASSED


@dataclass(frozen=True)
class StageResult:
    stage: str
    state: str  # passed, failed, unstable, interrupted
    reason: str  # why the stage failed without a failing test, else ""
    tests: tuple[TestOutcome, ...]
    uncollected: tuple[Mapping[str, object], ...]
    processes: tuple[ProcessOutcome, ...]
    started_at: float
    duration_seconds: float
    results_dir: Path

    def count(self, *outcomes: str) -> int:
        return sum(1 for test in self.tests if test.final.outcome in outcomes)

    @property
    def counts(self) -> dict[str, int]:
        return {
            "passed": self.count(junit.PASSED),
            "failed": self.count(junit.FAILED, junit.ERROR),
            "skipped": self.count(junit.SKIPPED),
        }


@dataclass
class _Batch:
    """The lines one process (and its resumes and rerun) runs."""

    label: str
    list_file: Path
    tests: list[TestOutcome] = field(default_factory=list)


def stage_variables(plan: StagePlan, settings: RunSettings) -> dict[str, str]:
    """What a stage adds to its pytest processes' environment: its name (the reference exports
    `stageName`), the run id, and its perf gate."""
    return {
        "CI_TOOL_STAGE": plan.stage,
        "CI_TOOL_RUN_ID": settings.run_id,
        "stageName": plan.stage,
        PERF_GATE_ENV: plan.perf_gate.value,
    }


def stage_env(plan: StagePlan, settings: RunSettings) -> dict[str, str]:
    """The child's environment: ours plus the stage's variables."""
    return {**os.environ, **stage_variables(plan, settings)}


def batches_of(plan: StagePlan, lists_dir: Path) -> list[tuple[str, Path, tuple[TestLine, ...]]]:
    """(label, list file, lines) for the regular lines and each ISOLATION line."""
    found = []
    if plan.regular:
        found.append(("main", lists_dir / "main.txt", plan.regular))
    for number, line in enumerate(plan.isolated, start=1):
        found.append((f"isolated-{number}", lists_dir / f"isolated-{number}.txt", (line,)))
    return found


def _isolated_file(plan: StagePlan, label: str, lists_dir: Path) -> dict[str, Path]:
    """For the main process: the ISOLATION lines (written by run_stage), whose tests a folder line of
    the main list may also select; they run in their own processes only."""
    return {"exclude_entries": lists_dir / "isolated.txt"} if label == "main" and plan.isolated else {}


def planned_invocations(plan: StagePlan, settings: RunSettings) -> list[PytestInvocation]:
    """The pytest processes a run of the plan starts when no test crashes or is rerun (`--dry-run`)."""
    lists_dir = settings.results_dir / "lists"
    return [
        replace(
            _invocation(plan, settings, label, list_file, **_isolated_file(plan, label, lists_dir)),
            label=f"p{number:02d}-{label}",
        )
        for number, (label, list_file, _) in enumerate(batches_of(plan, lists_dir), start=1)
    ]


def run_stage(plan: StagePlan, settings: RunSettings, *, on_event: EventSink | None = None) -> StageResult:
    """Run a planned stage and write its results folder."""
    started_at, clock = time.time(), time.monotonic()
    folder = settings.results_dir
    (folder / "lists").mkdir(parents=True, exist_ok=True)
    _write_lines(folder / "rendered.txt", plan.rendered)
    _write_lines(folder / "shard.txt", plan.lines)
    sink = on_event or (lambda event: None)
    env = stage_env(plan, settings)
    processes: list[ProcessOutcome] = []
    batches: list[_Batch] = []
    interrupted = False
    if plan.isolated:
        _write_lines(folder / "lists" / "isolated.txt", plan.isolated)
    for label, list_file, lines in batches_of(plan, folder / "lists"):
        _write_lines(list_file, lines)
        batch = _Batch(label, list_file)
        batches.append(batch)
        interrupted = _run_batch(plan, settings, batch, processes, env, sink)
        if interrupted:
            break
    if not interrupted and settings.rerun_flaky:
        interrupted = _rerun_flaky(plan, settings, batches, processes, env, sink)
    tests = tuple(test for batch in batches for test in batch.tests)
    uncollected = _uncollected(processes)
    state, reason = _state(tests, processes, interrupted)
    result = StageResult(
        plan.stage, state, reason, tests, uncollected, tuple(processes), started_at, time.monotonic() - clock, folder
    )
    junit.write_junit(folder / "junit.xml", plan.stage, [test.final for test in tests])
    write_text_atomically(folder / "result.json", json.dumps(result_json(result, plan), indent=1) + "\n")
    return result


def _invocation(plan: StagePlan, settings: RunSettings, label: str, list_file: Path, **files: Path) -> PytestInvocation:
    return PytestInvocation(
        label=label,
        list_file=list_file.resolve(),
        stage=plan.stage,
        parts_dir=(settings.results_dir / "parts").resolve(),
        test_timeout_seconds=settings.test_timeout_seconds,
        waives_file=Path(plan.waives_file).resolve() if plan.waives_file else None,
        extra_args=(*plan.pytest_args, *settings.extra_pytest_args),
        **{name: path.resolve() for name, path in files.items()},
    )


def _launch(
    invocation: PytestInvocation,
    settings: RunSettings,
    processes: list[ProcessOutcome],
    env: Mapping[str, str],
    sink: EventSink,
) -> ProcessOutcome:
    label = f"p{len(processes) + 1:02d}-{invocation.label}"
    numbered = replace(invocation, label=label)
    outcome = run_pytest_process(
        numbered,
        python=settings.python,
        rootdir=settings.rootdir,
        env=env,
        on_event=sink,
        interrupt_grace_seconds=settings.interrupt_grace_seconds,
    )
    processes.append(outcome)
    return outcome


def _run_batch(
    plan: StagePlan,
    settings: RunSettings,
    batch: _Batch,
    processes: list[ProcessOutcome],
    env: Mapping[str, str],
    sink: EventSink,
) -> bool:
    """Run a batch, resuming after each process that died in a test; True when interrupted."""
    done: list[str] = []
    label = batch.label
    isolated = _isolated_file(plan, batch.label, batch.list_file.parent)
    for _ in range(MAX_RESUMES + 1):
        files = {"exclude_nodeids": write_nodeids(batch.list_file.with_suffix(".done.txt"), done)} if done else {}
        files.update(isolated)
        outcome = _launch(_invocation(plan, settings, label, batch.list_file, **files), settings, processes, env, sink)
        finished = [*outcome.cases, *([outcome.unfinished] if outcome.unfinished else [])]
        batch.tests.extend(TestOutcome(case) for case in finished)
        done.extend(case.nodeid for case in finished)
        if outcome.interrupted:
            return True
        if outcome.completed or outcome.unfinished is None or outcome.collected is None:
            return False
        if not set(outcome.collected) - set(done):
            return False
        label = f"{batch.label}-resume"
    return False


def _rerun_flaky(
    plan: StagePlan,
    settings: RunSettings,
    batches: list[_Batch],
    processes: list[ProcessOutcome],
    env: Mapping[str, str],
    sink: EventSink,
) -> bool:
    """Rerun once the failures that match a known flaky signature; True when interrupted."""
    for batch in batches:
        flaky = {
            t.first.nodeid: sig.name for t in batch.tests if (sig := match_flaky(t.first, settings.flaky_signatures))
        }
        if not flaky:
            continue
        only = write_nodeids(batch.list_file.with_suffix(".rerun.txt"), list(flaky))
        files = {"only_nodeids": only, **_isolated_file(plan, batch.label, batch.list_file.parent)}
        invocation = _invocation(plan, settings, f"{batch.label}-rerun", batch.list_file, **files)
        outcome = _launch(invocation, settings, processes, env, sink)
        reruns = {c.nodeid: c for c in [*outcome.cases, *([outcome.unfinished] if outcome.unfinished else [])]}
        for index, test in enumerate(batch.tests):
            if test.first.nodeid in flaky:
                rerun = reruns.get(test.first.nodeid) or _missing_rerun(test.first, outcome)
                batch.tests[index] = TestOutcome(test.first, rerun, flaky[test.first.nodeid])
        if outcome.interrupted:
            return True
    return False


def _missing_rerun(first: junit.CaseResult, outcome: ProcessOutcome) -> junit.CaseResult:
    return junit.CaseResult(
        first.nodeid,
        junit.ERROR,
        message=f"the rerun process ended (exit code {outcome.exit_code}) before running this test",
        kind=junit.CRASH_KIND,
        stage=first.stage,
    )


def _uncollected(processes: Sequence[ProcessOutcome]) -> tuple[Mapping[str, object], ...]:
    """Entries that collected nothing, from each batch's first process (resumes and reruns repeat them)."""
    found: list[Mapping[str, object]] = []
    for outcome in processes:
        if "-resume" in outcome.label or "-rerun" in outcome.label:
            continue
        list_name = outcome.label.split("-", 1)[1]
        found.extend({**entry, "list": list_name} for entry in outcome.uncollected)
    return tuple(found)


def _state(tests: Sequence[TestOutcome], processes: Sequence[ProcessOutcome], interrupted: bool) -> tuple[str, str]:
    if interrupted:
        by = next((p.interrupted_by for p in processes if p.interrupted), CTRL_C)
        return INTERRUPTED, f"interrupted ({by})"
    broken = [p for p in processes if p.collected is None and p.unfinished is None]
    if broken:
        first = broken[0]
        return FAILED, f"pytest exited with code {first.exit_code} before running tests (see {first.log_file})"
    if not tests:
        return FAILED, "the stage's list collected no test"
    failing = [t for t in tests if t.final.is_failure]
    if any(t.final.prop(junit.UNSTABLE_PROPERTY) is None for t in failing):
        return FAILED, ""
    if failing or any(t.passed_on_rerun for t in tests):
        return UNSTABLE, ""
    return PASSED, ""


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
    }
