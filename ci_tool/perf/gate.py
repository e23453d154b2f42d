"""The perf gate, pure: a case's measured metrics, its baselines and the stage's gate in; a verdict per metric.

    lost coverage   the case requires CUDA graphs and a capture size was skipped or a step ran eager:
                    LOST_COVERAGE, whatever the stage (a sizing bug, not noise)
    past threshold  worse than its baseline by more than the threshold:
                      the target branch's newest post-merge result is past it too -> SKIPPED, with a note
                      (the regression is not this change's: the reference learned to skip then)
                      else the stage's gate: FAIL -> REGRESSED, WARN -> WARNED, NONE -> RECORDED
    otherwise       PASSED; NO_BASELINE when the metric is gated but has no baseline; RECORDED when not gated
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.baselines import Baseline
from ci_tool.perf.metrics import metric
from ci_tool.stages.modes import PerfGate

COVERAGE_METRICS = ("graph_coverage", "eager_steps")


@dataclass(frozen=True)
class Judged:
    metric: str
    value: float
    verdict: PerfVerdict
    baseline: Baseline | None = None
    note: str = ""

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
) -> list[Judged]:
    """One verdict per metric, in `values`' order. `target_latest`: the target branch's newest post-merge
    value per metric (absent: none recorded)."""
    latest = target_latest or {}
    coverage_lost = requires_graphs and lost_coverage(values)
    judged = []
    for name, value in values.items():
        if coverage_lost and name in COVERAGE_METRICS:
            judged.append(Judged(name, value, PerfVerdict.LOST_COVERAGE, note=_coverage_note(values)))
            continue
        entry = metric(name)
        baseline = baselines.get(name)
        if not entry.gated:
            judged.append(Judged(name, value, PerfVerdict.RECORDED, baseline))
        elif baseline is None:
            judged.append(Judged(name, value, PerfVerdict.NO_BASELINE))
        elif entry.worse_by(value, baseline.value) <= baseline.threshold:
            judged.append(Judged(name, value, PerfVerdict.PASSED, baseline))
        elif name in latest and entry.worse_by(latest[name], baseline.value) > baseline.threshold:
            worse = entry.worse_by(latest[name], baseline.value)
            note = (f"not gated: {target_branch}'s newest post-merge result ({latest[name]:.4g}) is "
                    f"{worse:.1%} worse than the baseline too")  # fmt: skip
            judged.append(Judged(name, value, PerfVerdict.SKIPPED, baseline, note))
        else:
            verdict = {PerfGate.FAIL: PerfVerdict.REGRESSED, PerfGate.WARN: PerfVerdict.WARNED}.get(
                gate, PerfVerdict.RECORDED
            )
            judged.append(Judged(name, value, verdict, baseline, _regression_note(name, value, baseline)))
    return judged


def _coverage_note(values: Mapping[str, float]) -> str:
    return (f"lost CUDA-graph coverage: {values.get('graph_coverage', 1.0):.0%} of the capture sizes captured, "
            f"{values.get('eager_steps', 0):.0f} step(s) eager")  # fmt: skip


def _regression_note(name: str, value: float, baseline: Baseline) -> str:
    entry = metric(name)
    worse = entry.worse_by(value, baseline.value)
    return (f"{name} {value:.4g} {entry.unit} is {worse:.1%} worse than its baseline {baseline.value:.4g} "
            f"(threshold {baseline.threshold:.0%})")  # fmt: skip


def failure_message(case_id: str, gpu: str, judged: list[Judged]) -> str:
    """One line naming every failing metric of a case, or "" when none fails."""
    failing = [j for j in judged if j.verdict.fails]
    notes = list(dict.fromkeys(j.note for j in failing))
    return f"{case_id} on {gpu}: " + "; ".join(notes) if notes else ""


def warning_message(case_id: str, gpu: str, judged: list[Judged]) -> str:
    warned = [j.note for j in judged if j.verdict is PerfVerdict.WARNED]
    return f"{case_id} on {gpu}: " + "; ".join(warned) if warned else ""
