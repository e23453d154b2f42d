"""Pairwise improvement of a shard assignment (the second half of the default algorithm, `lpt_pairwise`).

Start from an assignment (least_duration's) and repeat:

    top = the most loaded shard
    for each other shard j, least loaded first:
        re-split the union of top and j into the two halves closest to equal (subset-sum DP below);
        keep the new split only if the larger half is lighter than top was  -> next round
    if no j helps: re-split every other pair (neither is top) the same way, which changes what top
                   can trade with next round; stop when no pair changes

Every accepted re-split lowers the larger load of its pair and keeps the pair's sum, so the makespan
never rises and the sum of squared loads strictly falls: the loop ends (a deterministic work budget
bounds it on huge inputs), and the result is never worse than the assignment it started from.

The subset-sum DP works in integer units of (pair total / 2**16) so that it is a few big-int shifts:
bit s of `reach` says "some subset of the items seen so far sums to s units".

    reach_0 = 1                         (the empty subset)
    reach_k = reach_(k-1) | reach_(k-1) << units_k
    best    = the highest set bit <= half of the units; walk back through reach_(k-1) to find the items

Rounding can make the DP's split slightly off in seconds; the acceptance test uses the exact seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_RESOLUTION_BITS = 16
# Deterministic work cap, counted in items re-split. Real stage lists need under 10,000 (the largest
# case in bench/shard_bench.py: 76 tests into 16 shards); the cap only bounds pathological inputs.
_WORK_BUDGET = 30_000


def improve(seconds: Sequence[float], groups: Sequence[Sequence[int]]) -> list[list[int]]:
    """Improve `groups` (indices into `seconds`) by pairwise re-splits; each group comes back sorted."""
    state = _State(seconds, groups)
    while state.work_left > 0:
        top = max(range(len(state.shards)), key=lambda g: (state.loads[g], -g))
        if state.loads[top] <= state.lower_bound + state.tolerance:
            break
        if state.improve_top(top):
            continue
        if not state.rebalance_others(top):
            break
    return [sorted(group) for group in state.shards]


class _State:
    """The shards being improved, their loads, and what is left of the work budget."""

    def __init__(self, seconds: Sequence[float], groups: Sequence[Sequence[int]]) -> None:
        self.seconds = seconds
        self.shards = [list(group) for group in groups]
        self.loads = [math.fsum(seconds[i] for i in group) for group in self.shards]
        self.lower_bound = max(math.fsum(seconds) / len(self.shards), max(seconds, default=0.0))
        self.tolerance = 1e-6 * max(self.lower_bound, 1e-9)  # a millionth of a shard is noise
        self.work_left = _WORK_BUDGET
        self.versions = [0] * len(self.shards)  # bumped when a shard changes
        self.failed: set[tuple[int, int, int, int]] = set()  # re-splits that did not help, by shard versions

    def improve_top(self, top: int) -> bool:
        """Re-split `top` with the first partner (least loaded first) that lowers it."""
        partners = sorted((g for g in range(len(self.shards)) if g != top), key=lambda g: (self.loads[g], g))
        return any(self.resplit(top, partner) for partner in partners)

    def rebalance_others(self, top: int) -> bool:
        """Re-split every pair of shards other than `top`; whether any changed."""
        order = sorted((g for g in range(len(self.shards)) if g != top), key=lambda g: (-self.loads[g], g))
        changed = False
        for x, heavy in enumerate(order):
            for light in reversed(order[x + 1 :]):
                changed |= self.resplit(heavy, light)
        return changed

    def resplit(self, a: int, b: int) -> bool:
        """Re-split shards a and b as evenly as possible; keep it only if their larger load falls."""
        old_max = max(self.loads[a], self.loads[b])
        attempt = (a, b, self.versions[a], self.versions[b])
        if abs(self.loads[a] - self.loads[b]) <= self.tolerance or self.work_left <= 0 or attempt in self.failed:
            return False
        union = sorted(self.shards[a] + self.shards[b])
        self.work_left -= len(union)
        chosen = _closest_to_half([self.seconds[i] for i in union])
        first = [i for n, i in enumerate(union) if n in chosen]
        second = [i for n, i in enumerate(union) if n not in chosen]
        first_load = math.fsum(self.seconds[i] for i in first)
        second_load = math.fsum(self.seconds[i] for i in second)
        if max(first_load, second_load) >= old_max - self.tolerance:
            self.failed.add(attempt)
            return False
        self.shards[a], self.shards[b] = first, second
        self.loads[a], self.loads[b] = first_load, second_load
        self.versions[a] += 1
        self.versions[b] += 1
        return True


def _closest_to_half(weights: Sequence[float]) -> set[int]:
    """Positions of a subset whose sum is as close as possible to, and not above, half the total
    (in units of total / 2**16; see the module docstring)."""
    total = math.fsum(weights)
    if total <= 0:
        return set()
    unit = total / (1 << _RESOLUTION_BITS)
    units = [round(w / unit) for w in weights]
    half = sum(units) // 2
    mask = (1 << (half + 1)) - 1
    reach = 1
    before: list[int] = []
    for u in units:
        before.append(reach)
        reach = (reach | (reach << u)) & mask
    target = reach.bit_length() - 1
    chosen: set[int] = set()
    for position in reversed(range(len(units))):
        if not (before[position] >> target) & 1:  # not reachable without this item: it is in the subset
            target -= units[position]
            chosen.add(position)
    return chosen
