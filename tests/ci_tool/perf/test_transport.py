"""The `ci_tool.perf` JUnit property: what the fixture writes, a report reads back as the same rows."""

from __future__ import annotations

import dataclasses

import pytest

from ci_tool.history.perf_results import PerfResult
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.transport import from_property, to_property

ROWS = [
    PerfResult("r1", "S-1", "gpu-gemma_like-pool4g-b80", "H200", "decode_tokens_per_s", 9000.0, PerfVerdict.REGRESSED,
               0.0, 10000.0, 0.1, "10.0% worse", "t::id", True, noise=85.0, rounds=5),
    PerfResult("r1", "S-1", "gpu-gemma_like-pool4g-b80", "H200", "eager_steps", 0.0, PerfVerdict.RECORDED, 0.0,
               test_id="t::id", post_merge=True),
]  # fmt: skip


def test_a_property_reads_back_as_the_rows_it_was_written_from() -> None:
    text = to_property([dataclasses.replace(r, run_id="elsewhere", stage="?", post_merge=False) for r in ROWS])
    assert from_property(text, run_id="r1", stage="S-1", test_id="t::id", post_merge=True) == ROWS


@pytest.mark.parametrize(
    "text",
    ["not json", "{}", "[1]", '[{"case": "c"}]', '[{"case": "c", "gpu": "g", "metric": "m", "value": 1, '
     '"baseline": null, "threshold": null, "verdict": "great"}]'],
    ids=["not-json", "object", "not-an-object", "missing-keys", "unknown-verdict"],
)  # fmt: skip
def test_a_property_another_tool_set_reads_as_no_rows(text: str) -> None:
    assert from_property(text, run_id="r", stage="s", test_id="t", post_merge=False) == []
