"""Reuse (as TensorRT-LLM's CI reuses): what an earlier run of the same code and request scope spares a run.

    source   `--reuse-test RUN`: that run (`run_reuse`); otherwise the runs of a `ReuseKey`, the code and
             request scope (`reuse_of`): the newest finished run of that scope (`ci-tool run`), or, with no
             scope, every run of the code (CI, where each stage is a run of its own on its own agent,
             recorded with the scope `stage NAME`: the selection and `ci-tool stage run`)
    stages   the source's passed stages, and the stages it reused itself (from the run they passed in), the
             newest pass of each: they do not run again (selection step 18)
    tests    in each other stage of the source that ran tests, the tests that passed (or that were reused)
             in its newest run there:
             they are appended to that stage's waives as `<id> SKIP (Reused from run R)`, so only the
             rest runs; a stage none of whose tests passed gets none. An id the waives grammar cannot
             hold (a blank in its parameters) is waived through its function, `file::test_x`, when every
             recorded test of that function passed; else it runs again

A run's code is its commit and its uncommitted-change hash (gitinfo.code_version): a source whose code
differs is never reused, named or not. A passed stage stands in for a stage only when it ran with the same
inputs (its digest, StageRecord.inputs: the stage's list, waives and catalog entry), so a pass under another
test-db or catalog does not spare the stage; a record without one (from before the digest was kept) does not
either. Its passed tests still skip: a test that passed on this code passed, whatever list it came from (the
waives a pull request merges in change the inputs, not what passed).
Reuse matches exact stage names, and a stage narrowed by change-based selection carries `-cbts` in its name,
so it never stands in for a full one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ci_tool.history import queries, rows
from ci_tool.history.schema import INPUTS_STEP
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord
from ci_tool.outcomes import RunState, StageState, TestOutcome
from ci_tool.testdb.check import covers
from ci_tool.testdb.waives import waive_line

REUSED_FROM = "reused_from"  # a reused stage's details key: the run it passed in
InputsOf = Callable[[str], str]  # a stage name -> the digest of its inputs now ('': unknown, nothing is reused)
_REUSED_TEST = re.compile(r"Reused from run (\S+)")


def reused_test_reason(run_id: str) -> str:
    """The waive reason of a test reused from `run_id` (TensorRT-LLM's CI writes `Reused from previous pipeline`)."""
    return f"Reused from run {run_id}"


def reused_test_origin(reason: str | None) -> str | None:
    """The run a reused test passed in, from its waive reason; None for any other reason."""
    match = _REUSED_TEST.fullmatch(reason or "")
    return match.group(1) if match else None


@dataclass(frozen=True)
class ReusedTests:
    """The tests of one stage an earlier run passed (test id -> the run each passed in), and every test
    that stage recorded."""

    passed: Mapping[str, str]
    recorded: frozenset[str]

    def waive_lines(self) -> list[str]:
        """The stage's `<id> SKIP (Reused from run R)` lines (see the module docstring)."""
        lines: list[str] = []
        unwritable: set[str] = set()  # the functions of ids no waive line can hold
        for test_id, passed_in in self.passed.items():
            line = waive_line(test_id, reused_test_reason(passed_in))
            if line is not None:
                lines.append(line)
            elif "[" in test_id:
                unwritable.add(test_id.split("[", 1)[0])
        for function in sorted(unwritable):
            runs = {self.passed.get(test_id) for test_id in self.recorded if covers(function, test_id)}
            run = runs.pop() if len(runs) == 1 else None  # one run passed them all
            line = waive_line(function, reused_test_reason(run)) if run is not None else None
            if line is not None:
                lines.append(line)
        return lines


@dataclass(frozen=True)
class ReuseSource:
    """What a run may take from `run` (or from every run of its code): the passed stages and, per other stage,
    the passed tests; each with the run it passed in (where it passed, or the run it was reused from there)."""

    run: RunRecord | None  # None: every run of the code (ReuseKey)
    passed_stages: Mapping[str, str]  # stage -> run
    passed_tests: Mapping[str, ReusedTests]  # stage -> its passed tests

    @property
    def test_count(self) -> int:
        return sum(len(tests.passed) for tests in self.passed_tests.values())


def reused_stage_records(store: HistoryStore, stages: Sequence[StageRecord]) -> dict[str, StageRecord]:
    """Each reused stage of `stages` -> its record in the run it passed in: the counts and time a report
    shows for it (a stage whose run is gone since is left out)."""
    origins = {stage.name: origin for stage in stages if isinstance(origin := stage.details.get(REUSED_FROM), str)}
    ran = {run_id: {s.name: s for s in queries.run_stages(store, run_id)} for run_id in set(origins.values())}
    return {name: ran[origin][name] for name, origin in origins.items() if name in ran[origin]}


def same_code(run: RunRecord, *, commit: str, diff_hash: str) -> bool:
    return bool(run.code_commit) and (run.code_commit, run.code_diff) == (commit, diff_hash)


@dataclass(frozen=True)
class ReuseKey:
    """The runs a lookup reuses from: those of this code (commit and uncommitted-change hash) and request
    `scope`, of which the newest finished one stands (`ci-tool run`); with no scope, every run of the code
    (CI, where each stage is a run of its own, `stage NAME`, so no one run holds the pipeline)."""

    commit: str
    diff_hash: str
    scope: str | None


def reuse_of(
    store: HistoryStore,
    key: ReuseKey,
    *,
    inputs_of: InputsOf,
    stage: str | None = None,
    tests: bool = True,
    exclude: str | None = None,
) -> ReuseSource | None:
    """What the runs of `key` spare a run whose stages have the inputs `inputs_of` gives them now: each stage
    that passed in one of them with those inputs (the newest such pass), and in each other stage the tests
    its newest run there passed (with `tests`). Only `stage`, when named. None: a scoped key has no finished
    run (`exclude` is one not to count)."""
    if key.scope is None:
        records = _stages_of_code(store, commit=key.commit, diff_hash=key.diff_hash, name=stage)
        return _source(store, None, records, inputs_of=inputs_of, tests=tests)
    run = _latest_run_of(store, key, exclude=exclude)
    if run is None:
        return None
    return run_reuse(store, run, inputs_of=inputs_of, stage=stage, tests=tests)


def run_reuse(
    store: HistoryStore, run: RunRecord, *, inputs_of: InputsOf, stage: str | None = None, tests: bool = True
) -> ReuseSource:
    """What `run` alone spares (`--reuse-test RUN`), by the rule of reuse_of."""
    records = [record for record in queries.run_stages(store, run.run_id) if stage in (None, record.name)]
    return _source(store, run, _with_inputs(store, records), inputs_of=inputs_of, tests=tests)


def _latest_run_of(store: HistoryStore, key: ReuseKey, *, exclude: str | None) -> RunRecord | None:
    """The newest finished run of a scoped key (None: there is none)."""
    if store.version < queries.CODE_VERSION:
        return None
    row = store.row(
        f"SELECT {queries.run_columns(store)} FROM runs WHERE code_commit = ? AND code_diff = ? AND scope = ? "
        "AND state != ? AND run_id != ? ORDER BY started_at DESC, rowid DESC LIMIT 1",
        (key.commit, key.diff_hash, key.scope, RunState.RUNNING.value, exclude or ""),
    )
    return rows.run_record(store, row) if row is not None else None  # a bad one: no reuse (plan_reuse says why)


def _source(
    store: HistoryStore,
    run: RunRecord | None,
    records: Sequence[StageRecord],
    *,
    inputs_of: InputsOf,
    tests: bool,
) -> ReuseSource:
    """The rule of reuse_of over stage records, newest first."""
    passed: dict[str, str] = {}
    newest_ran: dict[str, StageRecord] = {}
    inputs: dict[str, str] = {}
    for record in records:
        if record.name not in inputs:
            inputs[record.name] = inputs_of(record.name)
        passed_in = _passed_in(record)
        if passed_in is not None and _same_inputs(record, inputs[record.name]):
            passed.setdefault(record.name, passed_in)
        elif record.state.ran:
            newest_ran.setdefault(record.name, record)
    found: dict[str, ReusedTests] = {}
    for name, record in newest_ran.items() if tests else ():
        if name not in passed and (stage_tests := _passed_tests(store, record.run_id, name)).passed:
            found[name] = stage_tests
    return ReuseSource(run, passed, found)


def _stages_of_code(store: HistoryStore, *, commit: str, diff_hash: str, name: str | None) -> list[StageRecord]:
    """The stage records (of `name`, or all) of every run of this code, newest first; a damaged row is
    left out (it spares nothing)."""
    if store.version < INPUTS_STEP or not commit:  # an older history's records have no inputs: none is reused
        return []
    named = " AND name = ?" if name is not None else ""
    raw = store.rows(
        f"SELECT {rows.STAGE_COLUMNS}, inputs_digest FROM stages WHERE run_id IN "
        f"(SELECT run_id FROM runs WHERE code_commit = ? AND code_diff = ?){named} ORDER BY started_at DESC",
        (commit, diff_hash, *((name,) if name is not None else ())),
    )
    return rows.read(store, raw, lambda row: _stage_with_inputs(store, row), skip=True)


def _stage_with_inputs(store: HistoryStore, row: Sequence[Any]) -> StageRecord:
    """A row of STAGE_COLUMNS and inputs_digest (a digest that is no text reads as unknown: nothing reused)."""
    digest = row[-1]
    return replace(rows.stage_record(store, row[:-1]), inputs=digest if isinstance(digest, str) else "")


def _with_inputs(store: HistoryStore, records: Sequence[StageRecord]) -> list[StageRecord]:
    """`records` (of one run) with their inputs' digests; all unknown in a history older than the digest."""
    if store.version < INPUTS_STEP or not records:
        return list(records)
    raw = store.rows("SELECT name, inputs_digest FROM stages WHERE run_id = ?", (records[0].run_id,))
    digests = {name: digest for name, digest in raw if isinstance(name, str) and isinstance(digest, str)}
    return [replace(record, inputs=digests.get(record.name, "")) for record in records]


def _same_inputs(record: StageRecord, inputs: str) -> bool:
    """Whether a record ran with `inputs`: both known and equal (an unknown side spares nothing)."""
    return bool(inputs) and record.inputs == inputs


def _passed_in(stage: StageRecord) -> str | None:
    """The run a stage record passed in: its own when it passed, its origin when it was reused."""
    if stage.state is StageState.PASSED:
        return stage.run_id
    if stage.state is StageState.REUSED:
        origin = stage.details.get(REUSED_FROM)
        return origin if isinstance(origin, str) and origin else stage.run_id
    return None


def _passed_tests(store: HistoryStore, run_id: str, stage: str) -> ReusedTests:
    passed: dict[str, str] = {}
    recorded = queries.stage_tests(store, run_id, stage)
    for test in recorded:
        origin = reused_test_origin(test.waive_reason) if test.final_outcome is TestOutcome.SKIPPED else None
        if test.final_outcome is TestOutcome.PASSED and test.rerun_outcome is None:
            passed[test.test_id] = run_id
        elif origin is not None:
            passed[test.test_id] = origin
    return ReusedTests(passed, frozenset(test.test_id for test in recorded))
