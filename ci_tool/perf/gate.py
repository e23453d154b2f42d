"""The perf gate, pure: a case's measured metrics, its baselines and the stage's gate in; a verdict per metric.

    lost coverage   the case requires CUDA graphs and a capture size was skipped or a step ran eager:
                    LOST_COVERAGE, whatever the stage (a sizing bug, not noise)
    past both       worse than its baseline by more than the threshold AND by more than NOISE_FACTOR x the
                    combined noise (the baseline's spread + this run's, both 1.4826 * MAD of their runs/rounds):
                      a wall-clock metric that passes net of what the host can explain (its thread waited
                      for a CPU, or the host ran slower than when the baselines were set: busy_host.py) ->
                      SKIPPED, with a note (the host may explain it all; the device's own bandwidth_fraction
                      is still judged, and a slowdown the host cannot explain still fails)
                      the target branch's newest post-merge result is past it too -> SKIPPED, with a note
                      (the regression is not this change's: TensorRT-LLM's CI learned to skip then)
                      else the stage's gate: FAIL -> REGRESSED, WARN -> WARNED, NONE -> RECORDED
    otherwise       PASSED (past the threshold but within the noise: PASSED, and the note says so);
                    NO_BASELINE when the metric is gated but has no baseline; RECORDED when not gated

The threshold keeps small real changes from failing; the noise term keeps an unchanged tree on a noisy
machine from failing: a launch-bound case whose rounds spread by 8 % cannot be judged at 10 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.baselines import Baseline
from ci_tool.perf.busy_host import host_loss
from ci_tool.perf.metrics import metric
from ci_tool.stages.modes import PerfGate

COVERAGE_METRICS = ("graph_coverage", "eager_steps")
NOISE_FACTOR = 3.0  # a regression must exceed 3 sigma of the combined noise: ~0.3 % false alarms on normal noise


@dataclass(frozen=True)
class Judged:
    metric: str
    value: float
    verdict: PerfVerdict
    baseline: Baseline | None = None
    note: str = ""
    noise: float = 0.0  # this run's noise (1.4826 * MAD of its rounds), in the metric's unit

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.baseline.value == 0:
            return None
        return (self.value - self.baseline.value) / self.baseline.value


def lost_coverage(values: Mapping[str, float]) -> bool:
    return values.get("graph_coverage", 1.0) < 1.0 or values.get("eager_steps", 0.0) > 0


def judge(
    values: Mapping[str, float],
    baselines: Mapping[str, Baseline],
    *,
    gate: PerfGate,
    requires_graphs: bool,
    target_latest: Mapping[str, float] | None = None,
    target_branch: str = "main",
    noise: Mapping[str, float] | None = None,
) -> list[Judged]:
    """One verdict per metric, in `values`' order. `target_latest`: the target branch's newest post-merge
    value per metric (absent: none recorded); `noise`: this run's noise per metric (absent: 0)."""
    latest = target_latest or {}
    run_noise = noise or {}
    coverage_lost = requires_graphs and lost_coverage(values)
    host = host_loss(values, baselines)
    judged = []
    for name, value in values.items():
        if coverage_lost and name in COVERAGE_METRICS:
            judged.append(Judged(name, value, PerfVerdict.LOST_COVERAGE, note=_coverage_note(values)))
            continue
        entry = metric(name)
        baseline = baselines.get(name)
        mine = run_noise.get(name, 0.0)
        if not entry.gated:
            judged.append(Judged(name, value, PerfVerdict.RECORDED, baseline, noise=mine))
        elif baseline is None:
            judged.append(Judged(name, value, PerfVerdict.NO_BASELINE, noise=mine))
        elif entry.worse_by(value, baseline.value) <= baseline.threshold:
            judged.append(Judged(name, value, PerfVerdict.PASSED, baseline, noise=mine))
        elif not beyond_noise(name, value, baseline, mine):
            note = "within noise: " + _numbers(name, value, baseline, mine)
            judged.append(Judged(name, value, PerfVerdict.PASSED, baseline, note, mine))
        elif entry.wall_clock and host and _passes(name, host.net(name, value), baseline, mine):
            note = f"not gated: {host.reason}; net of that it passes: " + _numbers(name, value, baseline, mine)
            judged.append(Judged(name, value, PerfVerdict.SKIPPED, baseline, note, mine))
        elif name in latest and entry.worse_by(latest[name], baseline.value) > baseline.threshold:
            worse = entry.worse_by(latest[name], baseline.value)
            note = (f"not gated: {target_branch}'s newest post-merge result ({latest[name]:.4g}) is "
                    f"{worse:.1%} worse than the baseline too")  # fmt: skip
            judged.append(Judged(name, value, PerfVerdict.SKIPPED, baseline, note, mine))
        else:
            verdict = {PerfGate.FAIL: PerfVerdict.REGRESSED, PerfGate.WARN: PerfVerdict.WARNED}.get(
                gate, PerfVerdict.RECORDED
            )
            judged.append(Judged(name, value, verdict, baseline, _numbers(name, value, baseline, mine), mine))
    return judged


def _passes(name: str, value: float, baseline: Baseline, run_noise: float) -> bool:
    """Within the threshold of the baseline, or within the noise."""
    within = metric(name).worse_by(value, baseline.value) <= baseline.threshold
    return within or not beyond_noise(name, value, baseline, run_noise)


def combined_noise(baseline: Baseline, run_noise: float) -> float:
    """The baseline's spread (between its runs) plus this run's (between its rounds), in the metric's unit."""
    return baseline.spread + run_noise


def beyond_noise(name: str, value: float, baseline: Baseline, run_noise: float) -> bool:
    """Worse than the baseline by more than NOISE_FACTOR x the combined noise."""
    worse = metric(name).worse_by(value, baseline.value) * abs(baseline.value)  # in the metric's unit
    return worse > NOISE_FACTOR * combined_noise(baseline, run_noise)


def _coverage_note(values: Mapping[str, float]) -> str:
    return (f"lost CUDA-graph coverage: {values.get('graph_coverage', 1.0):.0%} of the capture sizes captured, "
            f"{values.get('eager_steps', 0):.0f} step(s) eager")  # fmt: skip


def _numbers(name: str, value: float, baseline: Baseline, run_noise: float) -> str:
    """The numbers the verdict used: value, baseline, delta, threshold, noise (and the bar it sets)."""
    entry = metric(name)
    worse = entry.worse_by(value, baseline.value)
    noise = combined_noise(baseline, run_noise)
    bar = NOISE_FACTOR * noise / abs(baseline.value) if baseline.value else 0.0
    return (f"{name} {value:.4g} {entry.unit} is {worse:.1%} worse than its baseline {baseline.value:.4g} "
            f"(threshold {baseline.threshold:.0%}; noise {noise:.3g} {entry.unit} = baseline {baseline.spread:.3g} "
            f"+ run {run_noise:.3g}, {NOISE_FACTOR:g}x = {bar:.1%})")  # fmt: skip


def failure_message(case_id: str, gpu: str, judged: list[Judged]) -> str:
    """One line naming every failing metric of a case, or "" when none fails."""
    failing = [j for j in judged if j.verdict.fails]
    notes = list(dict.fromkeys(j.note for j in failing))
    return f"{case_id} on {gpu}: " + "; ".join(notes) if notes else ""


def warning_message(case_id: str, gpu: str, judged: list[Judged]) -> str:
    warned = [j.note for j in judged if j.verdict is PerfVerdict.WARNED]
    return f"{case_id} on {gpu}: " + "; ".join(warned) if warned else ""
