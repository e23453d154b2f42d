"""Measured flakiness: per test and GPU type, how often it fails and what that costs, from the history.

    runs              its results in the window (final outcomes; skips and waives excluded)
    failures          results that stayed red
    passed_on_rerun   results whose first attempt failed and whose one rerun passed
    flips             changes of final outcome between consecutive results, oldest first
    rate              (failures + passed_on_rerun) / runs: how often its first attempt fails
    first/last seen   the oldest and newest run where its first attempt failed
    signatures        the failure signatures of those attempts, most frequent first
    lost_gpu_minutes  a rerun costs the failed attempt's minutes, a red result its whole stage's minutes
                      (the stage runs again), each times the stage's GPUs (a CPU stage counts one device)

A test is flaky when its first attempt failed at least once and it also passed at least once (on its
first attempt or its rerun); a test that always fails is broken, not flaky, and is not listed. The GPU
type is the stage name's GPU token (`A10` of `A10-PyTorch-2`), the token `full:A10/` waives are scoped by.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter, defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ci_tool.errors import StageError
from ci_tool.history import rows
from ci_tool.history.queries import stage_family
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import TestOutcome
from ci_tool.stages.names import parse_family_name, parse_stage_name

FLAKE_WINDOW_DAYS = 30  # what "known flaky" and `ci-tool flaky report` read unless told otherwise
SECONDS_PER_DAY = 86_400
IDS_PER_QUERY = 500  # test ids asked about in one statement (well below either database's limit on parameters)


@dataclass(frozen=True)
class SignatureCount:
    signature: str
    count: int


@dataclass(frozen=True)
class FlakeStats:
    test_id: str
    gpu: str
    runs: int
    failures: int
    passed_on_rerun: int
    flips: int
    first_seen_run: str
    first_seen_at: float  # seconds since the epoch (the run's start)
    last_seen_run: str
    last_seen_at: float
    signatures: tuple[SignatureCount, ...]
    lost_gpu_minutes: float

    @property
    def flaky_runs(self) -> int:
        """Results whose first attempt failed."""
        return self.failures + self.passed_on_rerun

    @property
    def rate(self) -> float:
        return self.flaky_runs / self.runs

    @property
    def signature(self) -> str:
        """The most frequent failure signature."""
        return self.signatures[0].signature if self.signatures else ""

    def rate_text(self) -> str:
        """`33% (1 of 3 runs on A10)`."""
        return f"{self.rate:.0%} ({self.flaky_runs} of {self.runs} run{'s' if self.runs != 1 else ''} on {self.gpu})"


@dataclass(frozen=True)
class StageDevices:
    gpu: str  # the GPU token; a name outside the grammar is its own family
    devices: int  # GPUs the stage holds, at least one


@functools.lru_cache(maxsize=4096)
def stage_devices(stage: str) -> StageDevices:
    """The GPU type and device count a stage name says (the stage-name grammar decides both)."""
    for parse in (parse_stage_name, parse_family_name):  # a family name: its whole render ran as one stage
        try:
            name = parse(stage)
        except StageError:
            continue
        return StageDevices(name.gpu or stage_family(stage), max(1, name.gpu_count))
    return StageDevices(stage_family(stage), 1)


@dataclass
class _Tally:
    """What is counted of one test on one GPU type while the rows stream by (oldest first)."""

    finals: list[TestOutcome] = field(default_factory=list)
    failures: int = 0
    passed_on_rerun: int = 0
    seen: list[tuple[str, float]] = field(default_factory=list)  # (run id, start) of each failed first attempt
    signatures: Counter[str] = field(default_factory=Counter)
    lost_seconds: float = 0.0  # device-seconds


@dataclass(frozen=True)
class _Attempt:
    """One non-skipped result of the window, as the tally reads it."""

    test_id: str
    stage: str
    first: TestOutcome
    final: TestOutcome
    seconds: float
    signature: str
    run_id: str
    run_started_at: float
    stage_seconds: float | None  # None: the stage has no row


_COLUMNS = (
    "t.test_id, t.stage, t.outcome, t.rerun_outcome, t.duration_seconds, t.signature, t.kind, r.run_id, "
    "r.started_at, s.duration_seconds"
)


def _attempt(store: HistoryStore, row: Sequence[Any]) -> _Attempt:
    r = rows.view(store, "test_results", _COLUMNS, row).keyed(**{"r.run_id": "run id", "t.stage": "stage"})
    first = r.vocabulary("t.outcome", TestOutcome)
    stage_seconds = None if r.raw("s.duration_seconds") is None else r.seconds("s.duration_seconds")
    return _Attempt(
        r.key_text("t.test_id"), r.key_text("t.stage"), first,
        r.optional_vocabulary("t.rerun_outcome", TestOutcome) or first, r.seconds("t.duration_seconds"),
        r.text("t.signature") or r.text("t.kind") or "Failure", r.key_text("r.run_id"), r.timestamp("r.started_at"),
        stage_seconds,
    )  # fmt: skip


def flake_stats(
    store: HistoryStore, *, since: float, before: float | None = None, test_ids: Collection[str] | None = None
) -> list[FlakeStats]:
    """The flaky tests of runs started in [since, before), most GPU minutes lost first; `test_ids`: of those
    tests only (a run's report asks about its failures, not the whole window). A bad row is left out with a
    warning: the measure sums over many runs, and `stage run` reads it for its report."""
    tallies: dict[tuple[str, str], _Tally] = defaultdict(_Tally)
    for attempt in _attempts(store, since, before if before is not None else float("inf"), test_ids):
        where = stage_devices(attempt.stage)
        tally = tallies[(attempt.test_id, where.gpu)]
        first, final = attempt.first, attempt.final
        tally.finals.append(final.counted_as)
        if not first.is_failure:
            continue
        tally.seen.append((attempt.run_id, attempt.run_started_at))
        tally.signatures[attempt.signature] += 1
        if final.is_failure:
            tally.failures += 1
            tally.lost_seconds += (attempt.stage_seconds or attempt.seconds) * where.devices
        else:
            tally.passed_on_rerun += 1
            tally.lost_seconds += attempt.seconds * where.devices
    found = [_stats(key, tally) for key, tally in tallies.items() if _flaky(tally)]
    return sorted(found, key=lambda s: (-s.lost_gpu_minutes, -s.rate, s.test_id, s.gpu))


_WINDOW_SQL = (
    f"SELECT {_COLUMNS} FROM test_results t JOIN runs r ON r.run_id = t.run_id "
    "LEFT JOIN stages s ON s.run_id = t.run_id AND s.name = t.stage "
    "WHERE r.started_at >= ? AND r.started_at < ? AND coalesce(t.rerun_outcome, t.outcome) != ?"
)
_ORDER = " ORDER BY r.started_at, t.recorded_at, t.rowid"
# Only a test whose first attempt failed in the window can be flaky: the others' rows are never read (a row
# whose outcome is not ci-tool's counts as failed, so that it is read and heard as a bad row). Asked apart,
# not as a semi-join: PostgreSQL, before its statistics of a freshly filled table, ran that one for minutes.
_FAILED_FIRST = (
    "SELECT DISTINCT t.test_id FROM test_results t JOIN runs r ON r.run_id = t.run_id "
    "WHERE r.started_at >= ? AND r.started_at < ? AND t.outcome NOT IN (?, ?)"
)


def _attempts(store: HistoryStore, since: float, before: float, test_ids: Collection[str] | None) -> Iterator[_Attempt]:
    """The window's non-skipped results, oldest first per test: of every test whose first attempt failed
    in it, or of `test_ids`; found through the index by test id, a few hundred ids a statement (all of one
    test's rows come in one)."""
    window = (since, before, TestOutcome.SKIPPED.value)
    if test_ids is None:
        passing = (TestOutcome.PASSED.value, TestOutcome.SKIPPED.value)
        test_ids = [row[0] for row in store.rows(_FAILED_FIRST, (since, before, *passing))]
    ids = sorted(set(test_ids), key=str)  # str: a bad row's test id of another type is read (and heard) too
    for start in range(0, len(ids), IDS_PER_QUERY):
        chunk = ids[start : start + IDS_PER_QUERY]
        raw = store.rows(f"{_WINDOW_SQL} AND t.test_id IN ({', '.join('?' for _ in chunk)}){_ORDER}", (*window, *chunk))
        yield from rows.read(store, raw, lambda row: _attempt(store, row), skip=True)


def _flaky(tally: _Tally) -> bool:
    return bool(tally.seen) and tally.failures < len(tally.finals)


def _stats(key: tuple[str, str], tally: _Tally) -> FlakeStats:
    signatures = sorted(tally.signatures.items(), key=lambda item: (-item[1], item[0]))
    (first_run, first_at), (last_run, last_at) = tally.seen[0], tally.seen[-1]
    return FlakeStats(
        test_id=key[0],
        gpu=key[1],
        runs=len(tally.finals),
        failures=tally.failures,
        passed_on_rerun=tally.passed_on_rerun,
        flips=sum(1 for before, after in itertools.pairwise(tally.finals) if before != after),
        first_seen_run=first_run,
        first_seen_at=first_at,
        last_seen_run=last_run,
        last_seen_at=last_at,
        signatures=tuple(SignatureCount(signature, count) for signature, count in signatures),
        lost_gpu_minutes=round(tally.lost_seconds / 60, 3),
    )


KnownFlaky = Mapping[tuple[str, str], FlakeStats]  # (test id, GPU type) -> its measured flakiness


def known_flaky(
    store: HistoryStore, *, before: float, days: int = FLAKE_WINDOW_DAYS, test_ids: Collection[str] | None = None
) -> KnownFlaky:
    """The tests known to be flaky when a run started at `before`: measured on the `days` before it, so a
    run's own failures never make a test "known". `test_ids`: only those are asked about (a report asks
    about its failed tests: its cost follows them, not the window's size; none failed, nothing is read)."""
    if test_ids is not None and not test_ids:
        return {}
    stats = flake_stats(store, since=before - days * SECONDS_PER_DAY, before=before, test_ids=test_ids)
    return {(s.test_id, s.gpu): s for s in stats}
