"""Change points of a recorded perf series, with the commits they fall between: what `perf trend`, the HTML
perf page and post-merge stages report. Pure: PerfResult rows in, Shift values out.

    runs     ... c8 (15020)  | c9 (13560) ...     a change point at c9: it landed in c8..c9
                 last before    first after       (a git range: after c8, up to and including c9)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ci_tool.history.perf_results import PerfResult
from ci_tool.perf.changepoints import ChangePoint, change_points
from ci_tool.perf.metrics import metric

SHIFT_WINDOW = 60  # newest post-merge runs a stage searches: enough for a trend, quick to search


@dataclass(frozen=True)
class Shift:
    metric: str
    point: ChangePoint
    runs: int  # the series' length
    last_before: str  # the commit of the last run before the change point ("" when not recorded)
    first_after: str  # the commit of its first run

    @property
    def worse_by(self) -> float:
        """How much worse the new level is, relative (negative: better)."""
        return metric(self.metric).worse_by(self.point.after, self.point.before)

    @property
    def commit_range(self) -> str:
        return f"{self.last_before[:12] or '?'}..{self.first_after[:12] or '?'}"

    def line(self) -> str:
        entry = metric(self.metric)
        direction = f"{self.worse_by:.1%} worse" if self.worse_by > 0 else f"{-self.worse_by:.1%} better"
        return (f"change point at run {self.point.index + 1} of {self.runs}: {self.metric} {self.point.before:.4g} -> "
                f"{self.point.after:.4g} {entry.unit} ({direction}), commits {self.commit_range} "
                f"(p = {self.point.p_value:.3f})")  # fmt: skip


def series_shifts(series: Sequence[PerfResult]) -> list[Shift]:
    """The change points of one (case, GPU type, metric) series, oldest first."""
    if not series:
        return []
    found = change_points([r.value for r in series])
    return [Shift(series[0].metric, c, len(series), series[c.index - 1].commit, series[c.index].commit) for c in found]


def new_regressions(series: Sequence[PerfResult]) -> list[Shift]:
    """Change points for the worse that the newest run brought to light: found with it, not without it."""
    before = {s.point.index for s in series_shifts(series[:-1])}
    return [s for s in series_shifts(series) if s.point.index not in before and s.worse_by > 0]
