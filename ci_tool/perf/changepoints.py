"""Change points in a series, pure: E-Divisive with means (Matteson & James 2014), with a permutation test.

    values   10 11 10 9 10 11 | 14 15 14 13 14      one change point at index 6 (the new regime's first)

For a segment split at tau into X (before) and Y (after), the energy statistic

    q(tau) = m k / (m + k) * ( 2 mean|X - Y|  -  mean|X - X'|  -  mean|Y - Y'| )

is large when the two sides differ in distribution. The best split of each segment is a candidate; the
strongest candidate is kept when a permutation test says it is significant (shuffling its segment seldom
gives as large a q), and the segments on either side are searched again, until no candidate is.
Deterministic: the permutations come from a seeded generator, so a series always gives the same answer.

Why our own and not a package: Apache Otava is a whole tool (CSV/PostgreSQL/BigQuery/Graphite importers,
Slack, a CLI) incubating at 0.x; MongoDB's signal-processing-algorithms (the method's origin in perf CI) has
not released since 2024 and needs numpy, scipy and a native extension. Our series are a few hundred runs at
most; this O(n^2) pure-Python module is enough, and small enough to read.
"""

from __future__ import annotations

import itertools
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MIN_SEGMENT = 3  # points on each side of a change point: fewer cannot tell a step from one stray run
PERMUTATIONS = 199
P_VALUE = 0.01  # at most 1 % of shuffles may beat the split for it to count
SEED = 20140101


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first value of the new regime
    before: float  # the median of the segment before it
    after: float  # the median of the segment after it
    p_value: float

    @property
    def relative_change(self) -> float:
        return (self.after - self.before) / self.before if self.before else 0.0


def change_points(
    values: Sequence[float], *, permutations: int = PERMUTATIONS, p_value: float = P_VALUE, seed: int = SEED
) -> list[ChangePoint]:
    """The significant change points of `values`, by index."""
    rng = random.Random(seed)
    cuts: list[tuple[int, float]] = []  # (index, p-value)
    while True:
        bounds = [0, *sorted(i for i, _ in cuts), len(values)]
        best: tuple[float, int, int, int] | None = None  # (q, tau, lo, hi)
        for lo, hi in itertools.pairwise(bounds):
            found = best_split(values[lo:hi])
            if found is not None and (best is None or found[1] > best[0]):
                best = (found[1], lo + found[0], lo, hi)
        if best is None:
            break
        q, tau, lo, hi = best
        significance = _permutation_p(list(values[lo:hi]), q, rng, permutations, p_value)
        if significance > p_value:
            break
        cuts.append((tau, significance))
    ordered = sorted(cuts)
    bounds = [0, *(i for i, _ in ordered), len(values)]
    medians = [statistics.median(values[lo:hi]) for lo, hi in itertools.pairwise(bounds)]
    return [ChangePoint(index, medians[n], medians[n + 1], p) for n, (index, p) in enumerate(ordered)]


def best_split(segment: Sequence[float]) -> tuple[int, float] | None:
    """(tau, q) of the split of `segment` with the largest energy statistic; None when it is too short.

    As in Matteson & James, Y runs from tau to the best end kappa, not always to the segment's end: a short
    excursion (slower for six runs, then back) stands out against its own stretch, not the whole tail."""
    n = len(segment)
    if n < 2 * MIN_SEGMENT:
        return None
    # upto[j][t] = sum of |x_i - x_j| for i < t (t <= j): a column's prefix sums
    upto = []
    for j in range(n):
        sums = [0.0] * (j + 1)
        for i in range(j):
            sums[i + 1] = sums[i] + abs(segment[i] - segment[j])
        upto.append(sums)
    best: tuple[int, float] | None = None
    within_x = sum(upto[j][j] for j in range(MIN_SEGMENT))
    for tau in range(MIN_SEGMENT, n - MIN_SEGMENT + 1):
        m = tau
        cross = within_y = 0.0
        for kappa in range(tau + 1, n + 1):
            added = upto[kappa - 1]  # the point kappa - 1 joins Y
            cross += added[tau]
            within_y += added[kappa - 1] - added[tau]
            k = kappa - tau
            if k < MIN_SEGMENT:
                continue
            energy = 2 * cross / (m * k) - within_x / (m * (m - 1) / 2) - within_y / (k * (k - 1) / 2)
            q = m * k / (m + k) * energy
            if best is None or q > best[1]:
                best = (tau, q)
        within_x += upto[tau][tau]
    return best


def _permutation_p(segment: list[float], q: float, rng: random.Random, permutations: int, p_value: float) -> float:
    """(1 + shuffles whose best q reaches `q`) / (1 + shuffles); stops early once it cannot be significant."""
    reached = 0
    give_up = p_value * (permutations + 1)
    for _ in range(permutations):
        rng.shuffle(segment)
        found = best_split(segment)
        if found is not None and found[1] >= q:
            reached += 1
            if reached + 1 > give_up:
                return (reached + 1) / (permutations + 1)
    return (reached + 1) / (permutations + 1)
