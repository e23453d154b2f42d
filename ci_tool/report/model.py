"""The report of a run, built from the history: overall state and totals, the stages, failures grouped
by failure signature (exception type + normalized message), failures of tests known to be flaky on that GPU
type before the run (history/flakiness.py) apart, reruns of known flaky failures, waives applied by reason,
list entries that collected nothing, and the run's perf results with their trends; and its JSON form
(`ci-tool report --json`).

One value, built once: report_markdown.py (report.md, the PR bot's and `ci-tool report`'s text) and html.py
(the run page of `run --html-report`, `ci-tool report --format html` and the site) render the same CiReport.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ci_tool.history import queries
from ci_tool.history.flakiness import FlakeStats, KnownFlaky, known_flaky, stage_devices
from ci_tool.history.perf_results import PerfKey, PerfResult, perf_trends, run_perf_results
from ci_tool.history.queries import TREND_SAMPLES
from ci_tool.history.reuse_sources import reused_stage_records
from ci_tool.history.stage_details import Rerun, Uncollected, stage_reruns, stage_uncollected
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import COUNTED, StageState, TestOutcome
from ci_tool.perf.learning import quiet_needed_by_gpu, unbaselined_gpus


@dataclass(frozen=True)
class FailedTest:
    stage: str
    test_id: str
    outcome: TestOutcome  # the final outcome: failed or error
    kind: str
    message: str
    excerpt: str
    flake: FlakeStats | None = None  # how flaky it was known to be before the run; None: a new failure


@dataclass(frozen=True)
class FailureGroup:
    signature: str
    tests: tuple[FailedTest, ...]


@dataclass(frozen=True)
class CiReport:
    run: RunRecord
    stages: tuple[StageRecord, ...]
    failures: tuple[FailureGroup, ...]  # biggest group first
    reruns: tuple[Rerun, ...]
    waives: tuple[tuple[str, tuple[str, ...]], ...]  # reason, waived test ids
    uncollected: tuple[Uncollected, ...]
    perf: tuple[PerfResult, ...] = ()  # the run's perf-sanity results (the history's perf_results)
    known_flaky: tuple[FailedTest, ...] = ()  # failures of known flaky tests (not in `failures`)
    # per GPU type of `perf` without baselines: the quiet runs it still needs for one (perf/learning.py)
    quiet_needed: tuple[tuple[str, int], ...] = ()
    # A reused stage's name -> its record in the run it passed in (its counts and time, where it ran)
    reused_from: Mapping[str, StageRecord] = dataclasses.field(default_factory=dict)
    # (case, GPU type, metric) of each of `perf` -> its values up to this run, oldest first (the HTML draws them)
    perf_trends: Mapping[PerfKey, tuple[float, ...]] = dataclasses.field(default_factory=dict)

    @property
    def totals(self) -> dict[str, int]:
        return {key: sum(getattr(s, key) for s in self.stages) for key in COUNTED}

    @property
    def waiting(self) -> int:
        return sum(1 for stage in self.stages if stage.state is StageState.WAITING)


def load_report(store: HistoryStore, run_id: str, *, trend_samples: int = TREND_SAMPLES) -> CiReport:
    """The report of a recorded run, each perf metric's trend its latest `trend_samples` values."""
    run = queries.get_run(store, run_id)
    stages = queries.run_stages(store, run_id)
    tests = {stage.name: queries.stage_tests(store, run_id, stage.name) for stage in stages}
    perf = run_perf_results(store, run_id)
    known = known_flaky(store, before=run.started_at, test_ids=failed_test_ids(tests))
    needed = quiet_needed_by_gpu(store, unbaselined_gpus(perf))
    reused = reused_stage_records(store, stages)
    trends = perf_trends(store, perf, limit=trend_samples)
    return build_report(
        run, stages, tests, perf=perf, known=known, quiet_needed=needed, reused_from=reused, perf_trends=trends
    )


def failed_test_ids(tests: Mapping[str, Sequence[TestRecord]]) -> set[str]:
    """The tests that stayed red in a run (per stage): the only ones its report asks known_flaky about."""
    return {test.test_id for found in tests.values() for test in found if test.final_outcome.is_failure}


def build_report(
    run: RunRecord,
    stages: Sequence[StageRecord],
    tests: Mapping[str, Sequence[TestRecord]],
    *,
    perf: Sequence[PerfResult] = (),
    known: KnownFlaky | None = None,
    quiet_needed: Mapping[str, int] | None = None,
    reused_from: Mapping[str, StageRecord] | None = None,
    perf_trends: Mapping[PerfKey, Sequence[float]] | None = None,
) -> CiReport:
    """The report of a run; `known`: the tests known flaky before it, by (test id, GPU type); `quiet_needed`:
    the quiet runs each GPU type without baselines still needs; `reused_from`: each reused stage's record in
    the run it passed in; `perf_trends`: each perf metric's values up to the run (perf_results.perf_trends)."""
    groups: dict[str, list[FailedTest]] = defaultdict(list)
    flaky: list[FailedTest] = []
    waives: dict[str, list[str]] = defaultdict(list)
    for stage in stages:
        gpu = stage_devices(stage.name).gpu
        for test in tests.get(stage.name, ()):
            if test.final_outcome.is_failure:
                flake = (known or {}).get((test.test_id, gpu))
                failed = FailedTest(
                    stage.name, test.test_id, test.final_outcome, test.kind, test.message, test.output_head, flake
                )
                if flake is not None:
                    flaky.append(failed)
                else:
                    groups[test.signature or test.kind or "Failure"].append(failed)
            if test.waive_reason is not None:
                waives[test.waive_reason].append(test.test_id)
    failures = sorted((FailureGroup(sig, tuple(found)) for sig, found in groups.items()), key=_group_order)
    reruns = tuple(rerun for stage in stages for rerun in stage_reruns(stage))
    uncollected = tuple(entry for stage in stages for entry in stage_uncollected(stage))
    return CiReport(
        run,
        tuple(stages),
        tuple(failures),
        reruns,
        tuple((r, tuple(ids)) for r, ids in waives.items()),
        uncollected,
        tuple(perf),
        tuple(flaky),
        tuple((quiet_needed or {}).items()),
        dict(reused_from or {}),
        {key: tuple(values) for key, values in (perf_trends or {}).items()},
    )


def _group_order(group: FailureGroup) -> tuple[int, str]:
    return -len(group.tests), group.signature


def report_json(report: CiReport) -> dict[str, object]:
    run = report.run
    return {
        "run_id": run.run_id,
        "command": run.command,
        "state": run.state,
        "started_at": run.started_at,
        "duration_seconds": run_seconds(run),
        "totals": report.totals,
        "stages": [_stage_json(s) for s in report.stages],
        "failures": [{"signature": g.signature, "tests": [_failed_json(t) for t in g.tests]} for g in report.failures],
        "known_flaky": [_failed_json(t) for t in report.known_flaky],
        "reruns": [{"stage": r.stage, **r.as_details()} for r in report.reruns],
        "waives": [{"reason": reason, "tests": list(ids)} for reason, ids in report.waives],
        "uncollected": [{"stage": u.stage, **u.as_details()} for u in report.uncollected],
    }


def _failed_json(test: FailedTest) -> dict[str, object]:
    fields = {f.name: getattr(test, f.name) for f in dataclasses.fields(test) if f.name != "flake"}
    if test.flake is None:
        return fields
    flake = test.flake
    known = {"rate": round(flake.rate, 4), "flaky_runs": flake.flaky_runs, "runs": flake.runs, "gpu": flake.gpu}
    return {**fields, "known_flaky": known}


def _stage_json(stage: StageRecord) -> dict[str, object]:
    keys = ("name", "state", "reason", "duration_seconds", "passed", "failed", "skipped", "results_dir")
    return {key: getattr(stage, key) for key in keys}


def run_seconds(run: RunRecord) -> float | None:
    return round(run.finished_at - run.started_at, 3) if run.finished_at is not None else None
