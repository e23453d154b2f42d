"""Sharding: split a rendered test list into duration-balanced shards.

Algorithms (the registry ALGORITHMS; the CLI's --algorithm choices come from it):
- `least_duration`: pytest-split's algorithm, exactly: sort by id, stable-sort by descending seconds,
  give each test to the group with the least load (ties: lowest group), keep list order within a group.
- `lpt_pairwise` (the default): least_duration's result, then pairwise improvement (balance.py): the
  most loaded shard and another one are re-split as evenly as a subset-sum DP can, kept only when the
  larger of the two loads falls. Starting from least_duration's result and accepting only such steps,
  it can never be worse than least_duration.

Plans (`plan_shards`):
- every test lands in exactly one shard and no shard is empty: more shards than tests is an error, unless
  the plan is asked to keep the extra shards (`empty_shards_ok`: a catalog family whose stage names
  people already type keeps them, each shard past the tests' count empty); a shard left empty by
  zero-second tests gets a zero-second test from the fullest shard;
- ISOLATION tests are balanced like any other (as TensorRT-LLM's CI shards them by collection) and each
  shard lists them apart in `isolated_ids`: the runner runs those one per process;
- `splits=AutoSplits.AUTO` takes the smallest shard count whose split keeps every shard within `budget_seconds`
  (`shards_for_budget`); the catalog resolves its `splits: auto` families the same way.
"""

from __future__ import annotations

import enum
import heapq
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from ci_tool.errors import ShardError, did_you_mean
from ci_tool.stages.balance import improve
from ci_tool.stages.durations import Durations, estimate_seconds


class AutoSplits(enum.StrEnum):
    """A shard count chosen from a time budget instead of written (`splits: auto`, `--splits auto`)."""

    AUTO = "auto"


Splits = int | AutoSplits  # a written shard count, or AUTO

# An algorithm takes ids and their seconds (parallel lists) and a shard count, and returns the
# indices of the tests in each shard.
Algorithm = Callable[[Sequence[str], Sequence[float], int], list[list[int]]]


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, the K of the stage name
    test_ids: tuple[str, ...]  # in list order
    isolated_ids: tuple[str, ...]  # the subset to run one per process, in list order
    predicted_seconds: float

    @property
    def regular_ids(self) -> tuple[str, ...]:
        isolated = set(self.isolated_ids)
        return tuple(t for t in self.test_ids if t not in isolated)


@dataclass(frozen=True)
class ShardPlan:
    algorithm: str
    shards: tuple[Shard, ...]
    lower_bound_seconds: float  # max(total / shards, longest test): no plan can beat it

    @property
    def makespan_seconds(self) -> float:
        return max(s.predicted_seconds for s in self.shards)

    def shard(self, index: int) -> Shard:
        """Shard `index`, 1-based as in stage names."""
        if not 1 <= index <= len(self.shards):
            raise ShardError(f"expected a shard index from 1 to {len(self.shards)}, found {index}")
        return self.shards[index - 1]

    def to_json(self) -> dict[str, object]:
        """The `ci-tool shard --json` object."""
        return {
            "shards": [list(s.test_ids) for s in self.shards],
            "predicted_seconds": [round(s.predicted_seconds, 3) for s in self.shards],
        }


def least_duration(test_ids: Sequence[str], seconds: Sequence[float], splits: int) -> list[list[int]]:
    """pytest-split's `least_duration` (LPT with its tie-breaking), on indices."""
    order = sorted(range(len(test_ids)), key=lambda i: test_ids[i])
    order.sort(key=lambda i: seconds[i], reverse=True)  # stable: equal seconds stay in id order
    heap: list[tuple[float, int]] = [(0.0, group) for group in range(splits)]
    groups: list[list[int]] = [[] for _ in range(splits)]
    for i in order:
        load, group = heapq.heappop(heap)
        groups[group].append(i)
        heapq.heappush(heap, (load + seconds[i], group))
    return [sorted(group) for group in groups]


def lpt_pairwise(test_ids: Sequence[str], seconds: Sequence[float], splits: int) -> list[list[int]]:
    """least_duration, then pairwise re-splits that only ever lower the most loaded shard (balance.py)."""
    return improve(seconds, least_duration(test_ids, seconds, splits))


ALGORITHMS: dict[str, Algorithm] = {"least_duration": least_duration, "lpt_pairwise": lpt_pairwise}
DEFAULT_ALGORITHM = "lpt_pairwise"


def plan_shards(
    test_ids: Sequence[str],
    durations: Durations,
    *,
    splits: Splits,
    budget_seconds: float | None = None,
    algorithm: str = DEFAULT_ALGORITHM,
    isolated: Collection[str] = (),
    empty_shards_ok: bool = False,
) -> ShardPlan:
    """Split `test_ids` into shards balanced on the durations' estimates (see the module doc)."""
    split = _algorithm(algorithm)
    _check_ids(test_ids)
    seconds = estimate_seconds(test_ids, durations).seconds
    weights = [seconds[t] for t in test_ids]
    padding = 0
    if splits is AutoSplits.AUTO:
        count = shards_for_budget(test_ids, weights, budget_seconds, algorithm=algorithm)
    elif empty_shards_ok and splits > len(test_ids):
        count, padding = len(test_ids), splits - len(test_ids)
    else:
        count = check_splits(splits, len(test_ids))
    groups = [*_fill_empty(split(test_ids, weights, count), weights), *([] for _ in range(padding))]
    isolated_set = frozenset(isolated)
    shards = tuple(
        Shard(
            index=k + 1,
            test_ids=tuple(test_ids[i] for i in group),
            isolated_ids=tuple(test_ids[i] for i in group if test_ids[i] in isolated_set),
            predicted_seconds=math.fsum(weights[i] for i in group),
        )
        for k, group in enumerate(groups)
    )
    lower_bound = max(math.fsum(weights) / (count + padding), max(weights))
    return ShardPlan(algorithm, shards, lower_bound)


def _algorithm(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        raise ShardError(
            f"expected a sharding algorithm ({', '.join(ALGORITHMS)}), found {name!r}",
            hint=did_you_mean(name, ALGORITHMS),
        )
    return ALGORITHMS[name]


def _check_ids(test_ids: Sequence[str]) -> None:
    if not test_ids:
        raise ShardError("expected at least one test to shard, found an empty list")
    seen: set[str] = set()
    for test_id in test_ids:
        if test_id in seen:
            raise ShardError(
                f"expected each test once in the list to shard, found {test_id!r} twice",
                hint="remove the duplicate line",
            )
        seen.add(test_id)


def check_splits(splits: int, test_count: int) -> int:
    """`splits`, when that many shards of `test_count` tests leave none empty."""
    if splits < 1:
        raise ShardError(f"expected at least 1 shard, found splits={splits}")
    if splits > test_count:
        raise ShardError(
            f"expected at most {test_count} shards for {test_count} tests (no shard may be empty), "
            f"found splits={splits}",
            hint=f"use splits={test_count}, or splits=auto with a budget",
        )
    return splits


def greedy_makespan(test_ids: Sequence[str], weights: Sequence[float], count: int) -> float:
    """The slowest shard's seconds when `least_duration` splits the tests into `count` shards: an upper
    bound of the default algorithm's (it only ever lowers the slowest shard)."""
    if not weights:
        return 0.0
    return max(math.fsum(weights[i] for i in group) for group in least_duration(test_ids, weights, count))


def shards_for_budget(
    test_ids: Sequence[str], weights: Sequence[float], budget: float | None, *, algorithm: str = DEFAULT_ALGORITHM
) -> int:
    """The smallest shard count whose split keeps every shard within `budget` seconds (a count the cheap
    greedy split already fits is taken without running the algorithm)."""
    split = _algorithm(algorithm)
    if budget is None or budget <= 0:
        raise ShardError(
            f"expected a positive per-shard budget with splits=auto, found {budget!r}",
            hint="give the budget in minutes, e.g. --budget-minutes 120",
        )
    longest = max(range(len(weights)), key=lambda i: weights[i])
    if weights[longest] > budget:
        raise ShardError(
            f"expected every test to fit the per-shard budget of {budget:g} s, "
            f"found {test_ids[longest]!r} predicted at {weights[longest]:g} s",
            hint="raise the budget or give that test a stage of its own",
        )
    start = max(1, math.ceil(math.fsum(weights) / budget))
    for count in range(min(start, len(weights)), len(weights) + 1):
        if greedy_makespan(test_ids, weights, count) <= budget:
            return count
        if max(math.fsum(weights[i] for i in group) for group in split(test_ids, weights, count)) <= budget:
            return count
    return len(weights)  # one test per shard always fits: every test is within the budget


def _fill_empty(groups: list[list[int]], weights: Sequence[float]) -> list[list[int]]:
    """Give each empty shard the lightest test of the shard with the most tests (zero-second tests
    leave shards empty; moving one changes no load that matters)."""
    groups = [list(g) for g in groups]
    for empty in [g for g in groups if not g]:
        donor = max(groups, key=len)
        lightest = min(donor, key=lambda i: (weights[i], i))
        donor.remove(lightest)
        empty.append(lightest)
    return groups
