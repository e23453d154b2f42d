"""Slot arithmetic for sizing: how many slots a modeled batch needs per pool group, and the floors.

Pure integers. A `KvCacheDesc` is one modeled request (capacity, history); a batch is a tuple of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvengine.errors import ConfigError
from kvengine.lifecycle import CacheLayout


@dataclass(frozen=True)
class KvCacheDesc:
    """One modeled request: `capacity_tokens` with allocated blocks, `history_tokens` already consumed."""

    capacity_tokens: int
    history_tokens: int

    def __post_init__(self) -> None:
        if not 0 <= self.history_tokens <= self.capacity_tokens:
            raise ConfigError(
                f"a modeled request needs 0 <= history <= capacity, found history {self.history_tokens} "
                f"and capacity {self.capacity_tokens}.",
                hint="lower history or raise capacity",
            )


BatchDesc = tuple[KvCacheDesc, ...]

# The split used when nothing else is known: one request of 2049 tokens that consumed 2048.
FALLBACK_BATCH: BatchDesc = (KvCacheDesc(2049, 2048),)


@dataclass(frozen=True)
class SizingInputs:
    """What a manager hands the budget split: a ratio hint, hard floors, or an explicit ratio."""

    typical_step: BatchDesc | None = None
    constraints: tuple[BatchDesc, ...] = ()
    pool_ratio: tuple[float, ...] | None = None  # per life cycle


def request_slots(layout: CacheLayout, desc: KvCacheDesc) -> tuple[int, ...]:
    """Slots one request holds in each pool group (stale window blocks excluded)."""
    slots = [0] * len(layout.groups)
    for lc_id, cycle in enumerate(layout.life_cycles):
        slots[layout.group_of(lc_id)] += cycle.live_blocks(
            desc.capacity_tokens, desc.history_tokens, layout.tokens_per_block
        )
    return tuple(slots)


def batch_slots(layout: CacheLayout, batch: BatchDesc) -> tuple[int, ...]:
    """Slots a whole batch holds in each pool group."""
    totals = [0] * len(layout.groups)
    for desc in batch:
        for group_id, n in enumerate(request_slots(layout, desc)):
            totals[group_id] += n
    return tuple(totals)


def structural_floor_slots(layout: CacheLayout) -> tuple[int, ...]:
    """Per group: one request's steady-state window blocks (SWA); full attention gets the largest SWA floor."""
    tpb = layout.tokens_per_block
    window_floors = [c.window_floor_blocks(tpb) for c in layout.life_cycles if c.is_sliding]
    full_floor = max(window_floors, default=1)
    floors = [0] * len(layout.groups)
    for lc_id, cycle in enumerate(layout.life_cycles):
        floor = cycle.window_floor_blocks(tpb) if cycle.is_sliding else full_floor
        floors[layout.group_of(lc_id)] += floor
    return tuple(floors)


def constraint_floor_slots(
    layout: CacheLayout, constraints: tuple[BatchDesc, ...], *, max_util_for_resume: float
) -> tuple[int, ...]:
    """Per group: the most any constraint batch needs, with headroom so resume stays allowed."""
    floors = [0] * len(layout.groups)
    for batch in constraints:
        for group_id, n in enumerate(batch_slots(layout, batch)):
            floors[group_id] = max(floors[group_id], math.ceil(n / max_util_for_resume - 1e-9))
    return tuple(floors)


def floor_slots(
    layout: CacheLayout, constraints: tuple[BatchDesc, ...], *, max_util_for_resume: float
) -> tuple[int, ...]:
    """Element-wise max of the structural and the constraint floors."""
    structural = structural_floor_slots(layout)
    from_constraints = constraint_floor_slots(layout, constraints, max_util_for_resume=max_util_for_resume)
    return tuple(max(a, b) for a, b in zip(structural, from_constraints, strict=True))
