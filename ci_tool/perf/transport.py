"""A perf-sanity case's verdicts as one JUnit testcase property, `ci_tool.perf`: JSON, one object per metric.

The fixture writes it; reports that only have a build's test results read it back into PerfResult rows. On
Jenkins that is the test report API: the junit step keeps testcase properties with `keepProperties: true`
(junit plugin 1207+, see L0_Test.groovy.j2) and exports them per case as `properties`.

    [{"case": "gpu-gemma_like-pool4g-b80", "gpu": "H200", "metric": "decode_tokens_per_s", "value": 4.1e4,
      "baseline": 4.0e4, "threshold": 0.1, "verdict": "passed", "note": "", "noise": 310.0, "rounds": 5}, ...]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ci_tool.history.perf_results import PerfResult
from ci_tool.outcomes import PerfVerdict

PERF_PROPERTY = "ci_tool.perf"


def to_property(rows: Sequence[PerfResult]) -> str:
    return json.dumps([_carried(row) for row in rows], sort_keys=True)


def from_property(text: str, *, run_id: str, stage: str, test_id: str, post_merge: bool) -> list[PerfResult]:
    """The rows a property carries, with the stage run they came from; [] when it is not one we wrote (a
    report shows what it can read: a property another tool set does not fail the report)."""
    try:
        items = json.loads(text)
        return [_row(item, run_id=run_id, stage=stage, test_id=test_id, post_merge=post_merge) for item in items]
    except (ValueError, TypeError, KeyError):
        return []


def _carried(row: PerfResult) -> dict[str, object]:
    return {
        "case": row.case_id, "gpu": row.gpu, "metric": row.metric, "value": row.value, "baseline": row.baseline,
        "threshold": row.threshold, "verdict": row.verdict.value, "note": row.note, "noise": row.noise,
        "rounds": row.rounds,
    }  # fmt: skip


def _row(item: dict[str, Any], *, run_id: str, stage: str, test_id: str, post_merge: bool) -> PerfResult:
    baseline, threshold = item["baseline"], item["threshold"]
    return PerfResult(
        run_id, stage, str(item["case"]), str(item["gpu"]), str(item["metric"]), float(item["value"]),
        PerfVerdict(item["verdict"]), 0.0, None if baseline is None else float(baseline),
        None if threshold is None else float(threshold), str(item.get("note", "")), test_id, post_merge,
        noise=float(item.get("noise", 0.0)), rounds=int(item.get("rounds", 1)),
    )  # fmt: skip
