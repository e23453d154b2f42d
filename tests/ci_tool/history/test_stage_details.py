"""A stage's reruns and uncollected entries, typed: what run/recording.py writes into a stage's details is
what the report reads back, through a real history; an entry of another shape is left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.history import queries
from ci_tool.history.records import RunRecord, StageRecord
from ci_tool.history.stage_details import RERUNS, UNCOLLECTED, Rerun, Uncollected, stage_reruns, stage_uncollected
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import RunState, StageState, TestOutcome

RERUN = Rerun("CPU-Generic-1", "t.py::test_oom", "cuda-oom", TestOutcome.PASSED)
ENTRIES = (
    Uncollected("CPU-Generic-1", "gone.py", "no such file or folder", 3, "l0_a.yml"),
    Uncollected("CPU-Generic-1", "x.py -k nothing", "no collected test matches -k 'nothing'"),
)


def test_what_is_written_is_read_back_from_the_history(tmp_path: Path) -> None:
    details = {RERUNS: [RERUN.as_details()], UNCOLLECTED: [entry.as_details() for entry in ENTRIES]}
    stage = StageRecord("r1", "CPU-Generic-1", StageState.UNSTABLE, details=details)
    with HistoryStore(tmp_path / "history.sqlite") as store:
        store.record_run(RunRecord("r1", "ci-tool run", RunState.UNSTABLE, 0.0, 1.0), [(stage, [], 1.0)])
    with HistoryStore(tmp_path / "history.sqlite", read_only=True) as store:
        (read,) = queries.run_stages(store, "r1")
    assert (stage_reruns(read), stage_uncollected(read)) == ((RERUN,), ENTRIES)


BAD = {
    "not a list": "x",
    "not an object": ["x"],
    "no test id": [{"signature": "s", "rerun": "passed"}],
    "an outcome ci-tool does not know": [{"test_id": "t", "signature": "s", "rerun": "maybe"}],
    "an unhashable outcome": [{"test_id": "t", "signature": "s", "rerun": ["passed"]}],
}


@pytest.mark.parametrize("reruns", BAD.values(), ids=BAD.keys())
def test_a_rerun_of_another_shape_is_left_out(reruns: object) -> None:
    assert stage_reruns(StageRecord("r1", "S", StageState.PASSED, details={RERUNS: reruns})) == ()


def test_an_uncollected_entry_of_another_shape_is_left_out_and_a_bad_line_is_unknown() -> None:
    entries = [{"reason": "no id"}, {"id": 3, "reason": "an id not text"}, {"id": "a.py", "line": True}]
    (found,) = stage_uncollected(StageRecord("r1", "S", StageState.PASSED, details={UNCOLLECTED: entries}))
    assert found == Uncollected("S", "a.py", "", None, "")
