"""Reuse over every run of one code (CI's, where each stage is a run of its own), on both backends: a stage
that passed in any run of the code is reused from the newest such run; a stage that only failed spares the
tests its newest run passed; other code, runs of other code, and runs of the code with other inputs (another
test-db, catalog or waives: StageRecord.inputs) or with none recorded (older records) spare nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Generator

import pytest

from ci_tool.history import reuse_sources
from ci_tool.history.locator import History
from ci_tool.history.records import RunRecord, StageRecord, TestRecord
from ci_tool.history.reuse_sources import REUSED_FROM, ReusedTests, ReuseKey
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import RunState, StageState, TestOutcome

COMMIT, OTHER = "a" * 40, "b" * 40


def inputs_of(stage: str) -> str:
    """The digest of a stage's inputs as the runs below had them."""
    return f"inputs of {stage}"


def reuse_of(store: HistoryStore, stage: str, inputs: str | None = None) -> tuple[str | None, ReusedTests | None]:
    """What the runs of COMMIT with the stage's usual inputs (or `inputs`) spare it, as `ci-tool stage run`
    asks: the run it passed in, the tests that skip."""
    key = ReuseKey(COMMIT, "", None)
    found = reuse_sources.reuse_of(
        store, key, inputs_of=lambda name: inputs_of(name) if inputs is None else inputs, stage=stage
    )
    assert found is not None and found.run is None  # every run of the code: no one run
    return found.passed_stages.get(stage), found.passed_tests.get(stage)


def passed_on_code(store: HistoryStore, *, commit: str, diff_hash: str) -> dict[str, str]:
    """The stages every run of this code spares a selection (CI's, which asks for no tests)."""
    found = reuse_sources.reuse_of(store, ReuseKey(commit, diff_hash, None), inputs_of=inputs_of, tests=False)
    assert found is not None and not found.passed_tests
    return dict(found.passed_stages)


def stage_run(
    store: HistoryStore, run_id: str, stage: StageRecord, tests: tuple[TestRecord, ...] = (), *, commit: str = COMMIT
) -> None:
    """One `ci-tool stage run` as an agent records it: a run of its own, of one stage."""
    started = stage.started_at or 0.0
    stage = stage if stage.inputs else dataclasses.replace(stage, inputs=inputs_of(stage.name))
    store.start_run(RunRecord(run_id, f"ci-tool stage run {stage.name}", RunState.RUNNING, started,
                              code_commit=commit, scope=f"stage {stage.name}"))  # fmt: skip
    store.record_stage(stage, tests, recorded_at=started + 1)
    store.finish_run(run_id, state=RunState.FAILED if stage.state is StageState.FAILED else RunState.PASSED,
                     finished_at=started + 1)  # fmt: skip


@pytest.fixture
def store(history_at: History) -> Generator[HistoryStore]:
    with HistoryStore(history_at) as opened:
        stage_run(opened, "r1", StageRecord("r1", "CPU-1", StageState.PASSED, started_at=10.0))
        stage_run(opened, "r2", StageRecord("r2", "CPU-1", StageState.PASSED, started_at=20.0))  # the newest pass
        stage_run(opened, "r3", StageRecord("r3", "CPU-1", StageState.FAILED, started_at=30.0))  # a flake since
        stage_run(
            opened, "r4", StageRecord("r4", "CPU-2", StageState.REUSED, started_at=40.0, details={REUSED_FROM: "r0"})
        )
        failed = StageRecord("r5", "GPU-1", StageState.FAILED, started_at=50.0)
        tests = (
            TestRecord("t.py::test_ok", TestOutcome.PASSED, 1.0),
            TestRecord("t.py::test_bad", TestOutcome.FAILED, 1.0),
        )
        stage_run(opened, "r5", failed, tests)
        stage_run(opened, "r6", StageRecord("r6", "CPU-3", StageState.PASSED, started_at=60.0), commit=OTHER)
        yield opened


def test_every_stage_that_passed_on_the_code_is_reused_from_the_newest_run_it_passed_in(store: HistoryStore) -> None:
    assert passed_on_code(store, commit=COMMIT, diff_hash="") == {"CPU-1": "r2", "CPU-2": "r0"}
    assert passed_on_code(store, commit=OTHER, diff_hash="") == {"CPU-3": "r6"}
    edited = passed_on_code(store, commit=COMMIT, diff_hash="f" * 64)  # the commit with an edit
    assert edited == {}


def test_a_stage_that_only_failed_spares_the_tests_its_newest_run_passed(store: HistoryStore) -> None:
    passed_in, tests = reuse_of(store, "GPU-1")
    assert passed_in is None and tests is not None
    assert (dict(tests.passed), sorted(tests.recorded)) == (
        {"t.py::test_ok": "r5"},
        ["t.py::test_bad", "t.py::test_ok"],
    )
    assert reuse_of(store, "CPU-1") == ("r2", None)
    assert reuse_of(store, "CPU-3") == (None, None)  # another code's


@pytest.mark.parametrize(
    "inputs",
    [pytest.param("inputs of another test-db", id="other-inputs"), pytest.param("", id="unknown-inputs")],
)
def test_a_pass_with_other_inputs_spares_nothing(history_at: History, inputs: str) -> None:
    with HistoryStore(history_at) as store:
        stage_run(store, "r1", StageRecord("r1", "CPU-1", StageState.PASSED, started_at=10.0, inputs=inputs or "x"))
        if not inputs:  # a record from before the digest was kept
            store.write(lambda db: db.execute("UPDATE stages SET inputs_digest = ''"))
        assert reuse_of(store, "CPU-1", "inputs of CPU-1") == (None, None)
        assert passed_on_code(store, commit=COMMIT, diff_hash="") == {}
