"""Turn stage results into history records: one StageRecord per stage, one TestRecord per test, with
the failure signature and the first lines of output the CI report shows."""

from __future__ import annotations

import math
from pathlib import Path

from ci_tool.history.queries import PREDICTED_SECONDS, PROCESSES
from ci_tool.history.reuse_sources import REUSED_FROM
from ci_tool.history.stage_details import RERUNS, UNCOLLECTED, Rerun, uncollected_entries
from ci_tool.history.store import StageRecord, TestRecord
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit, output_bounds
from ci_tool.run.invocation import Attempt
from ci_tool.run.output_bounds import MAX_EXCERPT_CHARS
from ci_tool.run.pipeline import StageOutcome
from ci_tool.run.signatures import failure_excerpt, failure_signature
from ci_tool.run.stage_runner import StageResult, TestResult


def to_test_record(test: TestResult) -> TestRecord:
    """A test as the history keeps it: its texts within their bounds (a 2 MB message costs a few KiB; the
    excerpt says where the whole report is)."""
    first = test.first
    signature = excerpt = ""
    if first.is_failure:
        signature = str(failure_signature(first.kind, first.message, first.text))
        log = test.log_file.name if test.log_file is not None else ""
        excerpt = output_bounds.cut_text(
            failure_excerpt(first.text or first.message), MAX_EXCERPT_CHARS, full_text_in=log
        )
    waive_reason = first.prop(junit.WAIVED_PROPERTY)
    return TestRecord(
        test_id=first.nodeid,
        outcome=first.outcome,
        duration_seconds=round(first.duration_seconds, 3),
        rerun_outcome=test.rerun.outcome if test.rerun is not None else None,
        waive_reason=output_bounds.cut_line(waive_reason) if waive_reason is not None else None,
        kind=output_bounds.cut_line(first.kind),
        message=output_bounds.cut_line((first.message.strip().splitlines() or [""])[0]),
        signature=signature,
        output_head=excerpt,
    )


def to_stage_record(run_id: str, result: StageResult, *, inputs: str = "") -> StageRecord:
    """A stage that ran, with the digest of its `inputs` (run/stage_inputs.py)."""
    counts = result.counts
    return StageRecord(
        run_id=run_id,
        name=result.stage,
        state=result.state,
        reason=result.reason,
        started_at=result.started_at,
        duration_seconds=round(result.duration_seconds, 3),
        passed=counts[TestOutcome.PASSED],
        failed=counts[TestOutcome.FAILED],
        skipped=counts[TestOutcome.SKIPPED],
        results_dir=str(result.results_dir),
        inputs=inputs,
        details={
            UNCOLLECTED: [entry.as_details() for entry in uncollected_entries(result.stage, result.uncollected)],
            RERUNS: [
                Rerun(result.stage, t.first.nodeid, t.flaky or "", t.rerun.outcome).as_details()
                for t in result.tests
                if t.rerun is not None
            ],
            # where each failure's output is, relative to the stage's folder (the reports link it)
            "logs": {
                t.first.nodeid: _relative(t.log_file, result.results_dir)
                for t in result.tests
                if t.final.is_failure and t.log_file is not None
            },
            PROCESSES: process_samples(result),
            PREDICTED_SECONDS: round(result.predicted_seconds, 3),
            **result.details,
        },
    )


def _relative(path: Path, folder: Path) -> str:
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:  # not under the stage's folder: keep it whole
        return str(path)


def process_samples(result: StageResult) -> list[dict[str, object]]:
    """Per pytest process that ran its batch to the end in one go: its list entries, its wall seconds and
    its tests' own seconds (the difference is what the process cost beyond its tests: queries.process_costs)."""
    samples: list[dict[str, object]] = []
    for process in result.processes:
        resumed = any(
            other.invocation.batch.number == process.invocation.batch.number and other is not process
            for other in result.processes
        )
        if process.invocation.attempt is not Attempt.FIRST or not process.completed or resumed:
            continue
        samples.append(
            {
                "entries": [line.test_id for line in process.invocation.batch.lines],
                "seconds": round(process.seconds, 3),
                "tests_seconds": round(math.fsum(case.duration_seconds for case in process.cases), 3),
            }
        )
    return samples


def to_not_run_record(
    run_id: str, outcome: StageOutcome, *, reused_from: str | None = None, inputs: str = ""
) -> StageRecord:
    """A stage that did not run: it waits for a runner, was skipped, or is reused from run `reused_from` (with
    the `inputs` it matched, so a later run may reuse it in turn)."""
    details = {REUSED_FROM: reused_from} if reused_from else {}
    return StageRecord(
        run_id=run_id, name=outcome.name, state=outcome.state, reason=outcome.reason, details=details, inputs=inputs
    )
