"""Split a byte budget across pool groups (pure).

Ratio precedence: explicit pool ratio -> typical step -> constraints -> allocator fallback (one request
of capacity 2049, history 2048). Floors (structural window floors and constraint floors) always apply.
Unlike TensorRT-LLM's allocator, floors that exceed the budget raise a SizingError; pools never grow
past the budget silently.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kvengine.errors import ConfigError, SizingError
from kvengine.lifecycle import CacheLayout
from kvengine.quota import format_bytes, group_grains, slots_in_grains
from kvengine.slots import FALLBACK_BATCH, BatchDesc, SizingInputs, batch_slots, floor_slots


class RatioSource(enum.StrEnum):
    """Which input the pools' split came from, in precedence order."""

    POOL_RATIO = "pool_ratio"
    TYPICAL_STEP = "typical_step"
    CONSTRAINTS = "constraints"
    FALLBACK = "fallback"


@dataclass(frozen=True)
class GroupAllocation:
    """One pool group's share of the budget."""

    group_id: int
    num_slots: int
    floor_slots: int
    num_bytes: int
    share: float  # of all pool bytes


@dataclass(frozen=True)
class PoolPlan:
    """The split: slots and bytes per pool group, and where the ratio came from."""

    groups: tuple[GroupAllocation, ...]
    quota_bytes: int
    grain_bytes: int
    ratio_source: RatioSource
    weights: tuple[float, ...]

    @property
    def num_slots(self) -> tuple[int, ...]:
        return tuple(g.num_slots for g in self.groups)

    @property
    def total_bytes(self) -> int:
        return sum(g.num_bytes for g in self.groups)


def ratio_weights(
    layout: CacheLayout, inputs: SizingInputs, *, grain_bytes: int
) -> tuple[tuple[float, ...], RatioSource]:
    """Per-group weights (summing to 1) and which input they came from."""
    if inputs.pool_ratio is not None:
        if len(inputs.pool_ratio) != len(layout.life_cycles):
            labels = ", ".join(c.label() for c in layout.life_cycles)
            raise ConfigError(
                f"pool_ratio needs one weight per life cycle ({len(layout.life_cycles)}: {labels}), "
                f"found {len(inputs.pool_ratio)}.",
                hint="list the weights in the order the plan prints the life cycles",
            )
        weights = [0.0] * len(layout.groups)
        for lc_id, weight in enumerate(inputs.pool_ratio):
            weights[layout.group_of(lc_id)] += weight
        return _normalized(weights), RatioSource.POOL_RATIO
    if inputs.typical_step is not None:
        return _byte_weights(layout, inputs.typical_step, grain_bytes), RatioSource.TYPICAL_STEP
    if inputs.constraints:
        needed = [max(col) for col in zip(*(batch_slots(layout, b) for b in inputs.constraints), strict=True)]
        return _normalized([_bytes(layout, g, n, grain_bytes) for g, n in enumerate(needed)]), RatioSource.CONSTRAINTS
    return _byte_weights(layout, FALLBACK_BATCH, grain_bytes), RatioSource.FALLBACK


def split_budget(
    layout: CacheLayout, inputs: SizingInputs, *, quota_bytes: int, grain_bytes: int, max_util_for_resume: float
) -> PoolPlan:
    """Slots per pool group: weights split the budget in grains, groups below their floor are pinned to it."""
    weights, source = ratio_weights(layout, inputs, grain_bytes=grain_bytes)
    floors = floor_slots(layout, inputs.constraints, max_util_for_resume=max_util_for_resume)
    budget_grains = quota_bytes // grain_bytes
    _check_floors_fit(layout, floors, budget_grains, grain_bytes)

    pinned: dict[int, int] = {}
    active = list(range(len(layout.groups)))
    slots: dict[int, int] = {}
    while active:
        left = budget_grains - sum(group_grains(layout, g, n, grain_bytes) for g, n in pinned.items())
        slots = _split(layout, active, weights, left, grain_bytes)
        under = [g for g in active if slots[g] < floors[g]]
        if not under:
            break
        for g in under:
            pinned[g] = floors[g]
            active.remove(g)
    slots.update(pinned)
    counts = _spend_leftover(layout, slots, weights, budget_grains, grain_bytes)
    return _plan(layout, counts, floors, quota_bytes, grain_bytes, source, weights)


def _split(
    layout: CacheLayout, active: list[int], weights: tuple[float, ...], left: int, grain_bytes: int
) -> dict[int, int]:
    """Smallest weight first, each group takes its share of what is left; unused grains roll over."""
    slots: dict[int, int] = {}
    weight_left = sum(weights[g] for g in active)
    order = sorted(active, key=lambda g: weights[g])
    for g in order:
        take = left if g == order[-1] or weight_left <= 0 else round(left * weights[g] / weight_left)
        slots[g] = slots_in_grains(layout, g, take, grain_bytes)
        left -= group_grains(layout, g, slots[g], grain_bytes)
        weight_left -= weights[g]
    return slots


def _spend_leftover(
    layout: CacheLayout, slots: dict[int, int], weights: tuple[float, ...], budget_grains: int, grain_bytes: int
) -> list[int]:
    """Rounding slack goes, slot by slot, to the groups with the largest weight first."""
    counts = [slots[g] for g in range(len(layout.groups))]
    left = budget_grains - sum(group_grains(layout, g, n, grain_bytes) for g, n in enumerate(counts))
    for g in sorted(range(len(counts)), key=lambda g: -weights[g]):
        while True:
            extra = group_grains(layout, g, counts[g] + 1, grain_bytes) - group_grains(
                layout, g, counts[g], grain_bytes
            )
            if extra > left:
                break
            counts[g] += 1
            left -= extra
    return counts


def _check_floors_fit(layout: CacheLayout, floors: tuple[int, ...], budget_grains: int, grain_bytes: int) -> None:
    needed = sum(group_grains(layout, g, n, grain_bytes) for g, n in enumerate(floors)) * grain_bytes
    available = budget_grains * grain_bytes
    if needed <= available:
        return
    parts = ", ".join(
        f"group {g} ({layout.group_label(g)}) {n} slots" for g, n in enumerate(floors)
    )
    raise SizingError(
        f"KV-cache pool floors need {format_bytes(needed)} but the budget is {format_bytes(available)} "
        f"({parts}).",
        hint="raise the budget (--budget-gib, max_gpu_total_bytes or free_gpu_memory_fraction) or lower "
        "max_num_tokens, max_batch_size, max_seq_len or avg_seq_len",
    )


def _plan(
    layout: CacheLayout,
    counts: list[int],
    floors: tuple[int, ...],
    quota_bytes: int,
    grain_bytes: int,
    source: RatioSource,
    weights: tuple[float, ...],
) -> PoolPlan:
    sizes = [_bytes(layout, g, n, grain_bytes) for g, n in enumerate(counts)]
    total = sum(sizes) or 1
    groups = tuple(
        GroupAllocation(g, counts[g], floors[g], sizes[g], sizes[g] / total) for g in range(len(counts))
    )
    return PoolPlan(groups, quota_bytes, grain_bytes, source, weights)


def _bytes(layout: CacheLayout, group_id: int, num_slots: int, grain_bytes: int) -> int:
    return group_grains(layout, group_id, num_slots, grain_bytes) * grain_bytes


def _byte_weights(layout: CacheLayout, batch: BatchDesc, grain_bytes: int) -> tuple[float, ...]:
    slots = batch_slots(layout, batch)
    return _normalized([_bytes(layout, g, n, grain_bytes) for g, n in enumerate(slots)])


def _normalized(weights: list[float]) -> tuple[float, ...]:
    total = sum(weights)
    if total <= 0:
        return tuple(1.0 / len(weights) for _ in weights)
    return tuple(w / total for w in weights)
