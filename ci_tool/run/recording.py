"""Turn stage results into history records: one StageRecord per stage, one TestRecord per test, with
the failure signature and the first lines of output the CI report shows."""

from __future__ import annotations

from pathlib import Path

from ci_tool.history.store import StageRecord, TestRecord
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit
from ci_tool.run.pipeline import StageOutcome
from ci_tool.run.signatures import failure_excerpt, failure_signature
from ci_tool.run.stage_runner import StageResult, TestResult


def to_test_record(test: TestResult) -> TestRecord:
    first = test.first
    signature = excerpt = ""
    if first.is_failure:
        signature = str(failure_signature(first.kind, first.message, first.text))
        excerpt = failure_excerpt(first.text or first.message)
    return TestRecord(
        test_id=first.nodeid,
        outcome=first.outcome,
        duration_seconds=round(first.duration_seconds, 3),
        rerun_outcome=test.rerun.outcome if test.rerun is not None else None,
        waive_reason=first.prop(junit.WAIVED_PROPERTY),
        kind=first.kind,
        message=(first.message.strip().splitlines() or [""])[0],
        signature=signature,
        output_head=excerpt,
    )


def to_stage_record(run_id: str, result: StageResult) -> StageRecord:
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
        details={
            "uncollected": list(result.uncollected),
            "reruns": [
                {"test_id": t.first.nodeid, "signature": t.flaky, "rerun": t.rerun.outcome}
                for t in result.tests
                if t.rerun is not None
            ],
            # where each failure's output is, relative to the stage's folder (the reports link it)
            "logs": {
                t.first.nodeid: _relative(t.log_file, result.results_dir)
                for t in result.tests
                if t.final.is_failure and t.log_file is not None
            },
            **result.details,
        },
    )


def _relative(path: Path, folder: Path) -> str:
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:  # not under the stage's folder: keep it whole
        return str(path)


def to_not_run_record(run_id: str, outcome: StageOutcome) -> StageRecord:
    return StageRecord(run_id=run_id, name=outcome.name, state=outcome.state, reason=outcome.reason)
