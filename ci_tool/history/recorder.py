"""A run's records, none of them lost: written to the history as they come and, from the first write
the history cannot take (damaged, locked past every retry, not a history at all), kept in the run's
folder instead, while the run goes on:

    RUN_DIR/unrecorded.json   the run and each of its stages with its tests, as the history holds them

At the run's end the recorder tries the history once more (unless the run was interrupted, when time is
short): a history that answers again then takes the whole run from memory, the `running` row it took at the
start included, and unrecorded.json goes. Otherwise `ci-tool history import RUN_DIR` records that file later
(the generated pipelines run it in a step after each stage): in the same history once it is free, or in a
new one. The recorder keeps every record in memory too, so the run's report is complete either way.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from ci_tool.atomic import write_text_atomically
from ci_tool.errors import HistoryError, Where
from ci_tool.history import flakiness
from ci_tool.history.flakiness import KnownFlaky
from ci_tool.history.locator import History
from ci_tool.history.perf_results import PerfKey, PerfResult, perf_trends, post_merge_snapshot, record_perf_results
from ci_tool.history.records import RunRecord, StageRecord, StageRecords, TestRecord
from ci_tool.history.reuse_sources import reused_stage_records
from ci_tool.history.store import BUSY_TIMEOUT_MS, HistoryStore
from ci_tool.history.touch_table import TouchRow, WholeStage, record_touches
from ci_tool.history.unrecorded import UNRECORDED, unrecorded_json
from ci_tool.outcomes import RunState, StageState


class RunRecorder:
    """The history as a run writes it (start_run, record_stage, finish_run), with the run folder as the
    fallback. `warn` hears each retry as it happens; `unrecorded` is what to say of the outage at the end
    (one line), or None when the history holds the whole run."""

    def __init__(
        self,
        history: History,
        run_dir: Path,
        *,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        warn: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.history = history
        self.busy_timeout_ms = busy_timeout_ms
        self.run_dir = run_dir
        self.warn = warn
        self.run: RunRecord | None = None
        self.stages: dict[str, StageRecords] = {}
        self.perf: list[PerfResult] = []
        self.failure: HistoryError | None = None
        self.store: HistoryStore | None = None
        # Once the run is interrupted every write tries once, briefly: a CI cancel sends SIGKILL soon after
        # SIGTERM, and what the history misses stays in unrecorded.json (the stale-run sweep closes the run).
        self.hurry = False
        try:
            self.store = HistoryStore(history, busy_timeout_ms=busy_timeout_ms, on_retry=warn)
        except HistoryError as error:
            self._fall_back(error)

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.store is not None:
            self.store.close()

    def start_run(self, run: RunRecord) -> None:
        self.run = run
        self._write(lambda store: store.start_run(run))

    def record_stage(self, stage: StageRecord, tests: Sequence[TestRecord] = (), *, recorded_at: float) -> None:
        kept = dataclasses.replace(stage, details=_as_stored(stage.details))
        self.stages.pop(stage.name, None)  # a stage recorded again moves to the end, as in the history
        self.stages[stage.name] = (kept, tuple(tests), recorded_at)
        self.hurry = self.hurry or stage.state == StageState.INTERRUPTED
        hurry = self.hurry
        self._write(lambda store: store.record_stage(stage, tests, recorded_at=recorded_at, hurry=hurry))

    def record_touches(
        self, run_id: str, touches: Sequence[TouchRow], *, recorded_at: float, whole_stage: WholeStage | None = None
    ) -> None:
        """Store a stage's touch records (and, where it ran whole, drop those of its tests that are gone); without
        the history they stay in its folder (parts/*.touches.json)."""
        if self.store is not None and (touches or whole_stage is not None):
            try:
                record_touches(self.store, run_id, touches, recorded_at=recorded_at, whole_stage=whole_stage)
            except HistoryError as error:
                self._fall_back(error)

    def finish_run(self, run_id: str, *, state: RunState, finished_at: float) -> None:
        if self.run is not None:
            self.run = dataclasses.replace(self.run, state=state, finished_at=finished_at)
        self.hurry = self.hurry or state == RunState.INTERRUPTED
        hurry = self.hurry
        self._write(lambda store: store.finish_run(run_id, state=state, finished_at=finished_at, hurry=hurry))
        if not hurry:
            self._record_kept()

    def _record_kept(self) -> None:
        """After an outage, one more try: a history that answers again takes the whole run from memory (what
        `ci-tool history import` would do), so its `running` row does not wait for the stale-run sweep."""
        if self.failure is None or self.run is None:
            return
        try:
            store = HistoryStore(self.history, busy_timeout_ms=self.busy_timeout_ms, on_retry=self.warn)
        except HistoryError:
            return
        try:
            store.record_run(self.run, list(self.stages.values()))
        except HistoryError:
            store.close()
            return
        self.store, self.failure = store, None
        (self.run_dir / UNRECORDED).unlink(missing_ok=True)

    def report_input(self) -> tuple[RunRecord, list[StageRecord], dict[str, Sequence[TestRecord]]]:
        """The run, its stages in recording order and their tests: what the report is built from."""
        if self.run is None:
            raise ValueError("report_input() before start_run()")
        run = dataclasses.replace(self.run, details=_as_stored(self.run.details))
        return run, [s for s, _, _ in self.stages.values()], {s.name: t for s, t, _ in self.stages.values()}

    def record_perf(self, results: Sequence[PerfResult]) -> None:
        """Store the perf results a stage's tests handed back; without the history they stay in its folder
        (parts/*.perf.jsonl) and in the run's report."""
        self.perf.extend(results)
        if self.store is not None and results:
            try:
                record_perf_results(self.store, results)
            except HistoryError as error:
                self._fall_back(error)

    def perf_results(self) -> list[PerfResult]:
        """The run's perf-sanity results, as its stages handed them back, in the order they were measured."""
        return sorted(self.perf, key=lambda result: result.recorded_at)

    def perf_snapshot(self, *, window: int) -> list[PerfResult] | None:
        """What a stage's perf cases read of the history (perf_results.post_merge_snapshot); None when it cannot
        be read (the cases then gate on their baselines alone)."""
        if self.store is None:
            return None
        try:
            return post_merge_snapshot(self.store, window=window)
        except HistoryError as error:
            self.warn(f"{error}; the perf cases gate without the history's post-merge results")
            return None

    def perf_trends(self, results: Sequence[PerfResult], *, limit: int) -> dict[PerfKey, list[float]]:
        """Each perf metric's values up to the run (perf_results.perf_trends); none without a history: the
        report still comes, without trends."""
        if self.store is None or not results:
            return {}
        try:
            return perf_trends(self.store, results, limit=limit)
        except HistoryError as error:
            self.warn(f"{error}; the report draws no perf trends")
            return {}

    def reused_records(self, stages: Sequence[StageRecord]) -> dict[str, StageRecord]:
        """Each reused stage's record in the run it passed in (none without a history: the report still
        comes, without the counts of what it reused)."""
        if self.store is None:
            return {}
        try:
            return reused_stage_records(self.store, stages)
        except HistoryError as error:
            self.warn(f"{error}; the report does not count what the run reused")
            return {}

    def known_flaky(self, *, before: float, test_ids: Collection[str]) -> KnownFlaky:
        """Which of `test_ids` were known flaky before the run started (none without a history: the report
        still comes)."""
        if self.store is None:
            return {}
        try:
            return flakiness.known_flaky(self.store, before=before, test_ids=test_ids)
        except HistoryError as error:
            self.warn(f"{error}; the report does not mark known flaky failures")
            return {}

    @property
    def unrecorded(self) -> HistoryError | None:
        """Why the history does not hold this run, and where its records wait (a warning: the run's verdict
        is its tests')."""
        if self.failure is None:
            return None
        cause = f"{self.failure.where}: {self.failure.message}" if self.failure.where else self.failure.message
        then = f" ({self.failure.hint})" if self.failure.hint else ""
        return HistoryError(
            f"the run is not in the history ({cause}); its records wait in {self.run_dir / UNRECORDED} (its "
            "results are in this folder as always: result.json and junit.xml per stage)",
            where=Where(str(self.run_dir)),
            hint=f"`ci-tool history import {self.run_dir}` records them once the history can take them{then}",
        )

    def _write(self, write: Callable[[HistoryStore], None]) -> None:
        if self.store is not None:
            try:
                write(self.store)
                return
            except HistoryError as error:
                self._fall_back(error)
        if self.run is not None:
            write_text_atomically(
                self.run_dir / UNRECORDED,
                unrecorded_json(self.run, list(self.stages.values())),
                what="the run's records",
            )

    def _fall_back(self, error: HistoryError) -> None:
        """Keep the records in the run's folder from now on; the outage is said once, at the end (unrecorded)."""
        self.failure = error
        if self.store is not None:
            self.store.close()
            self.store = None


def _as_stored(details: Mapping[str, object]) -> dict[str, object]:
    """Details as the history gives them back (JSON with sorted keys), so the report reads the same."""
    stored: dict[str, object] = json.loads(json.dumps(details, sort_keys=True))
    return stored
