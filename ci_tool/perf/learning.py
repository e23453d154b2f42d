"""Baselines learnt from the history, not hand-made: which recorded runs of a GPU type are quiet, how many more
a GPU type without a baseline still needs, and the baseline file its quiet runs of one commit propose.

    a quiet run   every gated metric it recorded on the GPU type came from >= 2 rounds that agreed (noise at
                  most QUIET_NOISE of the value), none lost CUDA-graph coverage, its measuring thread
                  waited for a CPU at most HOST_BUSY of the time where that was recorded, and its host probe
                  took at most HOST_SLOW x the median of its commit's runs: the host was neither busy nor slow
                  (either can slow every round alike) and the engine ran as it should
    proposal      the newest commit with >= MIN_QUIET_RUNS quiet runs: per (case, baselined metric: the gated
                  ones and the host probe), the median of those runs and their spread (baseline_spread), the
                  runs named

Runs of one commit only ("the same code"): between commits a difference may be the code's, and a baseline
must measure the noise alone. The history is read through perf_results' own queries; nothing here writes.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ci_tool.errors import HistoryError, PerfError, Where
from ci_tool.history.perf_results import PerfResult, perf_keys, perf_series
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.baselines import Baseline
from ci_tool.perf.busy_host import HOST_BUSY, HOST_SLOW
from ci_tool.perf.metrics import BASELINED, GATED, HOST_PROBE, HOST_WAIT, metric
from ci_tool.perf.noise import robust_noise

# The fewest quiet runs of one commit a baseline is learnt from: with 5 run medians the median stands when
# one run is off, and their MAD (the spread) is not just the gap between two of them. `perf baseline set`
# takes 5 newest runs by default too.
MIN_QUIET_RUNS = 5
# A run whose rounds spread by more than this fraction of their median (1.4826 * MAD) ran on a busy host:
# the seed's loaded-host runs spread 12 %, quiet H200 runs 0.1-2 % (docs/PERF.md).
QUIET_NOISE = 0.05
CPU_GPU_TYPE = "cpu"  # the fixture's GPU type of CPU cases: their speed is recorded, never baselined
_HISTORY_LIMIT = 10000  # rows read per (case, metric): far more runs than any GPU type has of one commit


@dataclass(frozen=True)
class QuietRun:
    run_id: str
    commit: str
    recorded_at: float  # its newest row


@dataclass(frozen=True)
class BaselineProposal:
    gpu: str
    commit: str
    runs: tuple[QuietRun, ...]  # oldest first
    baselines: tuple[Baseline, ...]


def quiet_row(r: PerfResult) -> bool:
    """A gated metric measured on a quiet host (>= 2 rounds that agreed, coverage kept), a host's wait short
    enough (ci_tool.perf.host_wait), or a host probe (judged against the other runs: _host_not_slow)."""
    if r.metric == HOST_WAIT:
        return r.value <= HOST_BUSY
    if r.metric == HOST_PROBE:  # not by its own rounds: a spell may end mid-run
        return True
    return r.rounds >= 2 and r.value != 0 and r.noise <= QUIET_NOISE * abs(r.value) and not r.verdict.fails


def baseline_spread(series: Sequence[PerfResult]) -> float:
    """The noise between the runs' medians, and at least the median of their own round noise: a baseline
    from runs that happened to agree still carries the spread each run measured."""
    return max(robust_noise([r.value for r in series]), statistics.median(r.noise for r in series))


def gated_rows(store: HistoryStore, gpu: str) -> list[PerfResult]:
    """Every readable baselined-metric row recorded on `gpu`, and its runs' host waits (a bad row is left out with
    a warning)."""
    found: list[PerfResult] = []
    for case_id, name in perf_keys(store, gpu=gpu):
        if name in BASELINED or name == HOST_WAIT:
            found += perf_series(store, case_id, gpu=gpu, metric=name, limit=_HISTORY_LIMIT)
    return found


def quiet_runs(rows: Sequence[PerfResult]) -> dict[str, list[QuietRun]]:
    """The quiet runs per commit, oldest first; a run with any row that was not quiet is left out."""
    by_run: dict[str, list[PerfResult]] = {}
    for r in rows:
        by_run.setdefault(r.run_id, []).append(r)
    per_commit: dict[str, list[QuietRun]] = {}
    probes: dict[str, float] = {}  # run -> its host probe, the median over its cases
    for run_id, mine in by_run.items():
        commits = {r.commit for r in mine}
        if len(commits) != 1 or "" in commits or not all(quiet_row(r) for r in mine):
            continue
        quiet = QuietRun(run_id, mine[0].commit, max(r.recorded_at for r in mine))
        per_commit.setdefault(quiet.commit, []).append(quiet)
        probed = [r.value for r in mine if r.metric == HOST_PROBE]
        if probed:
            probes[run_id] = statistics.median(probed)
    return {c: sorted(_host_not_slow(runs, probes), key=lambda q: (q.recorded_at, q.run_id))
            for c, runs in per_commit.items()}  # fmt: skip


def _host_not_slow(runs: list[QuietRun], probes: Mapping[str, float]) -> list[QuietRun]:
    """The runs whose host probe took at most HOST_SLOW x the median of these runs' (a run without one stays)."""
    probed = [probes[q.run_id] for q in runs if q.run_id in probes]
    if not probed:
        return runs
    limit = HOST_SLOW * statistics.median(probed)
    return [q for q in runs if probes.get(q.run_id, 0.0) <= limit]


def quiet_runs_needed(rows: Sequence[PerfResult]) -> int:
    """How many more quiet runs of one commit a baseline needs: MIN_QUIET_RUNS less the best commit's count."""
    best = max((len(runs) for runs in quiet_runs(rows).values()), default=0)
    return max(0, MIN_QUIET_RUNS - best)


def propose(
    rows: Sequence[PerfResult], gpu: str, kept: Mapping[tuple[str, str], Baseline], *, where: str, limit: int
) -> BaselineProposal:
    """The baselines the newest commit with enough quiet runs proposes (its newest `limit` quiet runs); kept
    thresholds stay, other baselines of the file stay as they are. Too few: a PerfError with the count needed."""
    per_commit = quiet_runs(rows)
    ready = [runs for runs in per_commit.values() if len(runs) >= MIN_QUIET_RUNS]
    if not ready:
        best = max(per_commit.items(), key=lambda item: (len(item[1]), item[1][-1].recorded_at), default=None)
        found = f"{len(best[1])} (commit {best[0]})" if best else "0"
        needed = MIN_QUIET_RUNS - (len(best[1]) if best else 0)
        raise PerfError(
            f"expected {MIN_QUIET_RUNS} quiet runs of one commit on {gpu} to propose baselines, found {found}: "
            f"{needed} more needed", where=Where(where),
            hint=f"run its PerfSanity stage on a quiet {gpu} host (a run is quiet when every gated metric's rounds "
                 f"agree within {QUIET_NOISE:.0%} and it waited at most {HOST_BUSY:.0%} of the time for a CPU)",
        )  # fmt: skip
    runs = tuple(max(ready, key=lambda runs: runs[-1].recorded_at)[-limit:])
    chosen = {q.run_id for q in runs}
    by_key: dict[tuple[str, str], list[PerfResult]] = {}
    for r in rows:
        if r.run_id in chosen and r.metric in BASELINED:
            by_key.setdefault((r.case_id, r.metric), []).append(r)
    proposed = dict(kept)
    for (case_id, name), series in sorted(by_key.items()):
        old = kept.get((case_id, name))
        threshold = old.threshold if old and metric(name).gated else float(metric(name).threshold or 0.0)
        value = statistics.median(r.value for r in series)
        proposed[(case_id, name)] = Baseline(case_id, gpu, name, value, threshold, len(series), runs[0].commit,
                                             baseline_spread(series))  # fmt: skip
    return BaselineProposal(gpu, runs[0].commit, runs, tuple(proposed.values()))


def no_baseline_line(gpu: str, needed: int | None) -> str:
    """What a report says of a GPU type without baselines; `needed`: the quiet runs still needed (None: the
    report had no history to count them in)."""
    propose_one = f"`ci-tool perf baseline propose --gpu {gpu}`"
    if needed is None:
        more = f"{MIN_QUIET_RUNS} quiet runs of one commit set one ({propose_one})"
    elif needed:
        more = f"{needed} more quiet run(s) set one"
    else:
        more = f"enough quiet runs: propose one with {propose_one}"
    return f"no baseline for {gpu}: gating on the threshold only; {more}"


def unbaselined_gpus(results: Sequence[PerfResult]) -> list[str]:
    """The GPU types (not `cpu`) among a run's results whose every gated metric had no baseline."""
    gated = [r for r in results if r.metric in GATED and r.gpu != CPU_GPU_TYPE]
    gpus = dict.fromkeys(r.gpu for r in gated)
    return [g for g in gpus if all(r.verdict is PerfVerdict.NO_BASELINE for r in gated if r.gpu == g)]


def quiet_needed_by_gpu(store: HistoryStore, gpus: Sequence[str]) -> dict[str, int]:
    """quiet_runs_needed of each GPU type, from the history."""
    return {gpu: quiet_runs_needed(gated_rows(store, gpu)) for gpu in gpus}


def quiet_needed_if_read(
    store: HistoryStore | None, gpus: Sequence[str], warn: Callable[[str], None]
) -> dict[str, int]:
    """quiet_needed_by_gpu for a run's own report: without a readable history the report still comes, and says
    how many quiet runs a baseline takes instead of how many more (a warning says why)."""
    if store is None or not gpus:
        return {}
    try:
        return quiet_needed_by_gpu(store, gpus)
    except HistoryError as error:
        warn(f"{error}; the report does not count the quiet runs a baseline still needs")
        return {}
