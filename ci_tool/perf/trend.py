"""`perf trend`'s picture: one case's metric over its recorded runs, with the baseline and threshold drawn in,
and each change point (shifts.py) as a dotted line between the last run before it and the first after,
labelled with its commit range.

matplotlib (the `perf` extra) draws off-screen (Agg); points are coloured by verdict, post-merge runs are
filled and pre-merge ones hollow, and the band between the baseline and its threshold is shaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ci_tool.errors import PerfError
from ci_tool.history.perf_results import PerfResult
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.baselines import Baseline
from ci_tool.perf.metrics import Better, metric
from ci_tool.perf.shifts import Shift

_COLOURS = {PerfVerdict.REGRESSED: "tab:red", PerfVerdict.WARNED: "tab:orange", PerfVerdict.SKIPPED: "tab:purple",
            PerfVerdict.LOST_COVERAGE: "tab:red"}  # fmt: skip


def draw_trend(
    results: Sequence[PerfResult], baseline: Baseline | None, png: Path, shifts: Sequence[Shift] = ()
) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PerfError("`perf trend --png` needs matplotlib, found none installed",
                        hint="pip install 'ci-tool[perf]'") from None  # fmt: skip
    first = results[0]
    entry = metric(first.metric)
    figure, axes = plt.subplots(figsize=(9, 4.5), dpi=100)
    xs = list(range(1, len(results) + 1))
    axes.plot(xs, [r.value for r in results], color="tab:blue", linewidth=1, zorder=1)
    for x, r in zip(xs, results, strict=True):
        colour = _COLOURS.get(r.verdict, "tab:blue")
        axes.scatter([x], [r.value], s=36, zorder=2, edgecolors=colour, facecolors=colour if r.post_merge else "white")
    if baseline is not None:
        limit = baseline.value * (1 - baseline.threshold if entry.better is Better.HIGHER else 1 + baseline.threshold)
        axes.axhline(baseline.value, color="tab:green", label=f"baseline {baseline.value:.4g}")
        axes.axhline(limit, color="tab:red", linestyle="--", label=f"threshold {baseline.threshold:.0%} ({limit:.4g})")
        axes.axhspan(min(limit, baseline.value), max(limit, baseline.value), color="tab:green", alpha=0.08)
    for shift in shifts:  # xs are 1-based: the change lies between x = index and x = index + 1
        colour = "tab:red" if shift.worse_by > 0 else "tab:green"
        axes.axvline(shift.point.index + 0.5, color=colour, linestyle=":", linewidth=1.5,
                     label=f"change point {shift.commit_range} ({shift.point.relative_change:+.1%})")  # fmt: skip
    if baseline is not None or shifts:
        axes.legend(loc="best", fontsize=8)
    axes.set_title(f"{first.case_id} on {first.gpu}: {entry.title}", fontsize=10)
    axes.set_xlabel("recorded run (oldest first; filled = post-merge)")
    axes.set_ylabel(f"{first.metric} ({entry.unit})")
    axes.set_xticks(xs, [r.commit[:7] or r.run_id[-4:] for r in results], rotation=45, fontsize=7)
    figure.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png)
    plt.close(figure)
