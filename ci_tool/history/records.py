"""The records of a run as the history holds them: the run, each stage, each test (frozen values; rows.py
reads them back, store.py writes them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ci_tool.outcomes import RunState, StageState, TestOutcome


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    command: str
    state: RunState
    started_at: float
    finished_at: float | None = None
    host: str = ""
    details: Mapping[str, object] = field(default_factory=dict)
    code_commit: str = ""  # the commit the run tested ("" outside a git checkout)
    code_diff: str = ""  # the hash of the uncommitted change ("" for a clean checkout)
    scope: str = ""  # what the run was asked to select (SelectionRequest.scope; "stage NAME" for one stage)


@dataclass(frozen=True)
class StageRecord:
    run_id: str
    name: str
    state: StageState
    reason: str = ""  # why it did not run, or why it failed without tests
    started_at: float | None = None
    duration_seconds: float = 0.0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    results_dir: str = ""
    details: Mapping[str, object] = field(default_factory=dict)
    # The digest of what the stage ran with: its list, waives and catalog entry (run/stage_inputs.py). Reuse
    # matches it: a pass with other inputs (another test-db or catalog) spares nothing. '' (unknown): never reused.
    inputs: str = ""


@dataclass(frozen=True)
class TestRecord:
    """One test of one stage. `outcome` is the first attempt's; `rerun_outcome` the rerun's, if any."""

    __test__ = False  # not a pytest test class despite the name

    test_id: str
    outcome: TestOutcome
    duration_seconds: float
    rerun_outcome: TestOutcome | None = None
    waive_reason: str | None = None
    kind: str = ""
    message: str = ""
    signature: str = ""
    output_head: str = ""

    @property
    def final_outcome(self) -> TestOutcome:
        return self.rerun_outcome or self.outcome


StageRecords = tuple[StageRecord, Sequence[TestRecord], float]  # a stage, its tests, when it was recorded
