"""`ci-tool waive verify`: prove a waived test fixed before its waive goes.

    lift     the waive lines of the test that apply on the stage's GPU type (the stage runs with no
             waives file at all: only the named tests run, so no other waive is lifted by it)
    stage    the catalog family whose render lists the test (its context, query, markers), with only
             the named tests as its lines; one run of it is one recorded run of the history
    runs     N runs, each a real pytest process through the session's executor, first attempts only
             (no rerun of known flaky failures: a pass on rerun is a flake, not a fix); a group stops
             early once every test of it has failed (nothing left to prove)
    verdict  a test is proven when every one of the N runs ran it and it passed every time

Pure here: choosing the stage and the lines, and the verdicts; running is `verify_runs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ci_tool.errors import RunError, TestDbError, did_you_mean
from ci_tool.outcomes import RunState, TestOutcome
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage, SessionConfig, run_session
from ci_tool.run.signatures import failure_signature
from ci_tool.run.stage_runner import StageResult
from ci_tool.stages.stage_plan import StagePlan
from ci_tool.testdb.check import covers
from ci_tool.testdb.lines import TestLine
from ci_tool.testdb.waives import Waive


def waives_of(test_id: str, waives: Sequence[Waive]) -> list[Waive]:
    """The waives that name `test_id` exactly; an id no waive names is an error with the closest ids."""
    found = [waive for waive in waives if waive.test_id == test_id]
    if not found:
        raise TestDbError(
            f"expected the id of a waived test, found {test_id!r}, which no waive names",
            hint=did_you_mean(test_id, [waive.test_id for waive in waives])
            or "pass the id exactly as its waive line writes it (without `full:GPU/`)",
        )
    return found


def lifted(test_id: str, waives: Sequence[Waive], gpu: str | None, *, line_ids: Mapping[int, int]) -> list[Waive]:
    """The waive lines of `test_id` that hold on stages of `gpu`; a line that also waives other tests is
    refused (deleting it would unwaive them too). `line_ids`: how many ids each waives line holds."""
    found = [waive for waive in waives_of(test_id, waives) if waive.applies_to(gpu)]
    for waive in found:
        if waive.where.line is not None and line_ids.get(waive.where.line, 1) > 1:
            raise TestDbError(
                f"expected a waive line of one test, found {test_id!r} on a line with "
                f"{line_ids[waive.where.line] - 1} other test(s)",
                where=waive.where,
                hint=f"split the line into one line per test, then verify {test_id} again",
            )
    return found


def verify_lines(plan: StagePlan, test_ids: Sequence[str]) -> StagePlan:
    """`plan` running only `test_ids`, each with the markers of the rendered line that lists it."""
    lines = []
    for test_id in test_ids:
        listed = next((line for line in plan.rendered if covers(line.test_id, test_id)), None)
        if listed is None:
            raise RunError(f"expected {test_id!r} in the render of {plan.name.name}, found it in no line")
        raw = test_id + (f" TIMEOUT ({listed.timeout_minutes})" if listed.timeout_minutes else "")
        raw += " ISOLATION" if listed.isolation else ""
        lines.append(TestLine(raw, test_id, listed.timeout_minutes, listed.isolation))
    chosen = tuple(lines)
    return replace(
        plan,
        lines=chosen,
        isolated=tuple(line for line in chosen if line.isolation),
        shard=None,
        shards=1,
        shard_plan=None,
        waives_file=None,
    )


@dataclass(frozen=True)
class FixVerdict:
    test_id: str
    runs_asked: int
    runs: int  # runs that ran it
    passed: int  # runs where every result it covers passed
    first_failure: str = ""  # the signature (or outcome) of its first failing run
    first_failed_run: str = ""  # that run's id

    @property
    def proven(self) -> bool:
        return self.passed == self.runs == self.runs_asked


def verdicts(test_ids: Sequence[str], results: Sequence[tuple[str, StageResult]], runs_asked: int) -> list[FixVerdict]:
    """Each test's verdict over the (run id, stage result) of its runs."""
    found = []
    for test_id in test_ids:
        ran = passed = 0
        failure = failed_run = ""
        for run_id, result in results:
            covered = [t for t in result.tests if covers(test_id, t.first.nodeid)]
            if not covered:
                continue
            ran += 1
            bad = next((t.final for t in covered if t.final.outcome is not TestOutcome.PASSED), None)
            if bad is None:
                passed += 1
            elif not failure:
                why = str(failure_signature(bad.kind, bad.message, bad.text)) if bad.is_failure else bad.outcome
                failure, failed_run = f"{bad.nodeid}: {why}", run_id
        found.append(FixVerdict(test_id, runs_asked, ran, passed, failure, failed_run))
    return found


def verify_runs(
    plan: StagePlan,
    stage: PlannedStage,
    test_ids: Sequence[str],
    *,
    runs: int,
    config: SessionConfig,
    progress: Progress,
    on_run: Callable[[str, int, StageResult | None], None] = lambda run_id, number, result: None,
) -> list[FixVerdict]:
    """Run `plan` (the waived tests, waives lifted) up to `runs` times, each a recorded run, and judge."""
    config = replace(config, rerun_flaky=False)
    planned = replace(stage, plan=lambda: plan)
    results: list[tuple[str, StageResult]] = []
    for number in range(1, runs + 1):
        command = f"ci-tool waive verify {' '.join(test_ids)} (run {number} of {runs})"
        session = run_session(command, [planned], config=config, fail_fast=True, progress=progress)
        result = session.results[0] if session.results else None
        on_run(session.run_id, number, result)
        if session.unrecorded is not None:
            raise session.unrecorded
        if result is None:
            outcome = session.pipeline.stages[0] if session.pipeline.stages else None
            found = f"{outcome.state.words}: {outcome.reason}" if outcome else "it did not run"
            raise RunError(
                f"expected {plan.name.name} to run on this executor, found it {found}",
                hint="run `ci-tool waive verify` on a runner of that GPU type, or pass --executor slurm",
            )
        if session.state is RunState.INTERRUPTED:  # Ctrl-C stopped pytest: no verdict from a cut run
            raise KeyboardInterrupt
        results.append((session.run_id, result))
        if all(v.passed < v.runs for v in verdicts(test_ids, results, runs)):
            break
    return verdicts(test_ids, results, runs)
