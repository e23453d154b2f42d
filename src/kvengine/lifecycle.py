"""Life cycles, slot geometry and pool groups: how layers map onto shared block pools (pure).

Layers with the same (window, sink blocks) allocate and free blocks together: one *life cycle*.
Inside a life cycle, buffers of equal geometry are coalesced into one pool whose slot holds one
block of every such buffer. Life cycles whose slot geometry is identical share a *pool group*
(one free list; one slot id addresses one row in each of the group's pools).

Stale blocks of a sliding-window life cycle (W tokens, S sink blocks, history h, block size B):

    blocks:  [0 .. S) sinks | [S .. end) stale | [end .. ceil(capacity/B)) live
    end = max(S', (h + 1 - W) // B),  S' = min(ceil(h / B), S)

The +1 is the in-flight token at position h: the live window is [h + 1 - W, h].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvengine.spec import DTYPE_BYTES, LayerSpec


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class LifeCycle:
    """Blocks of all layers with this window and sink count live and die together."""

    window_tokens: int | None
    sink_blocks: int = 0

    @property
    def is_sliding(self) -> bool:
        return self.window_tokens is not None

    def stale_blocks(self, history_tokens: int, tokens_per_block: int) -> range:
        """Block indices no longer needed once `history_tokens` tokens were consumed."""
        start = min(ceil_div(history_tokens, tokens_per_block), self.sink_blocks)
        if self.window_tokens is None:
            return range(start, start)
        return range(start, max(start, (history_tokens + 1 - self.window_tokens) // tokens_per_block))

    def live_blocks(self, capacity_tokens: int, history_tokens: int, tokens_per_block: int) -> int:
        """Blocks a request with this capacity and history holds in this life cycle."""
        num_blocks = ceil_div(capacity_tokens, tokens_per_block)
        stale = self.stale_blocks(history_tokens, tokens_per_block)
        return num_blocks - max(0, min(stale.stop, num_blocks) - stale.start)

    def window_floor_blocks(self, tokens_per_block: int) -> int:
        """Blocks one request needs in steady state: sinks plus a window straddling one extra block."""
        assert self.window_tokens is not None
        return self.sink_blocks + (self.window_tokens + tokens_per_block - 2) // tokens_per_block + 1

    def label(self) -> str:
        text = "full" if self.window_tokens is None else f"window {self.window_tokens}"
        return text + (f" + {self.sink_blocks} sink blocks" if self.sink_blocks else "")


@dataclass(frozen=True)
class BufferGeometry:
    """Shape and dtype of one buffer (key or value) per token."""

    num_kv_heads: int
    head_dim: int
    dtype: str

    def bytes_per_token(self) -> int:
        return self.num_kv_heads * self.head_dim * DTYPE_BYTES[self.dtype]


@dataclass(frozen=True)
class PoolGeometry:
    """One pool: `num_buffers` coalesced buffers of one geometry per slot."""

    buffer: BufferGeometry
    num_buffers: int

    def slot_bytes(self, tokens_per_block: int) -> int:
        return self.num_buffers * self.buffer.bytes_per_token() * tokens_per_block


@dataclass(frozen=True)
class PoolGroup:
    """Life cycles sharing one free list; a slot is one row in each of `pools`."""

    group_id: int
    life_cycle_ids: tuple[int, ...]
    pools: tuple[PoolGeometry, ...]

    def slot_bytes(self, tokens_per_block: int) -> int:
        return sum(pool.slot_bytes(tokens_per_block) for pool in self.pools)


@dataclass(frozen=True)
class LayerPlacement:
    """Where one layer's buffers live: pool group, pool, and buffer index inside a slot."""

    layer_id: int
    life_cycle_id: int
    group_id: int
    pool_index: int
    key_buffer: int
    value_buffer: int | None  # None for key-only caches


@dataclass(frozen=True)
class CacheLayout:
    """The whole mapping from layers to life cycles, pool groups and buffer positions."""

    tokens_per_block: int
    life_cycles: tuple[LifeCycle, ...]
    groups: tuple[PoolGroup, ...]
    placements: tuple[LayerPlacement, ...]

    def group_of(self, life_cycle_id: int) -> int:
        return next(g.group_id for g in self.groups if life_cycle_id in g.life_cycle_ids)

    def slot_bytes(self, group_id: int) -> int:
        return self.groups[group_id].slot_bytes(self.tokens_per_block)

    def group_label(self, group_id: int) -> str:
        return "; ".join(self.life_cycles[lc].label() for lc in self.groups[group_id].life_cycle_ids)

    def group_window(self, group_id: int) -> int | None:
        """The largest window in the group, None when any life cycle is full attention."""
        windows = [self.life_cycles[lc].window_tokens for lc in self.groups[group_id].life_cycle_ids]
        return None if None in windows else max(w for w in windows if w is not None)


def build_layout(
    layers: Sequence[LayerSpec], windows: Sequence[int | None], *, tokens_per_block: int
) -> CacheLayout:
    """Group layers into life cycles (first-seen order) and life cycles into pool groups."""
    life_cycles: list[LifeCycle] = []
    members: list[list[int]] = []
    for layer_id, (layer, window) in enumerate(zip(layers, windows, strict=True)):
        cycle = LifeCycle(window, ceil_div(layer.sink_tokens, tokens_per_block))
        if cycle not in life_cycles:
            life_cycles.append(cycle)
            members.append([])
        members[life_cycles.index(cycle)].append(layer_id)

    geometries: list[tuple[PoolGeometry, ...]] = []
    placements: dict[int, LayerPlacement] = {}
    for lc_id, layer_ids in enumerate(members):
        pools, positions = _coalesce([layers[i] for i in layer_ids])
        geometries.append(pools)
        for layer_id, (pool_index, key_buffer, value_buffer) in zip(layer_ids, positions, strict=True):
            placements[layer_id] = LayerPlacement(layer_id, lc_id, -1, pool_index, key_buffer, value_buffer)

    keys: list[tuple[PoolGeometry, ...]] = []
    group_members: list[list[int]] = []
    for lc_id, pools in enumerate(geometries):
        if pools not in keys:
            keys.append(pools)
            group_members.append([])
        group_members[keys.index(pools)].append(lc_id)
    groups = tuple(PoolGroup(g, tuple(m), keys[g]) for g, m in enumerate(group_members))
    group_of_lc = {lc: g.group_id for g in groups for lc in g.life_cycle_ids}
    ordered = tuple(
        LayerPlacement(p.layer_id, p.life_cycle_id, group_of_lc[p.life_cycle_id], p.pool_index,
                       p.key_buffer, p.value_buffer)
        for p in (placements[i] for i in range(len(layers)))
    )
    return CacheLayout(tokens_per_block, tuple(life_cycles), groups, ordered)


def _coalesce(
    layers: Sequence[LayerSpec],
) -> tuple[tuple[PoolGeometry, ...], list[tuple[int, int, int | None]]]:
    """Pools of one life cycle (largest slot first) and each layer's (pool, key, value) buffer indices."""
    counts: dict[BufferGeometry, int] = {}
    raw: list[tuple[BufferGeometry, int, int | None]] = []
    for layer in layers:
        geometry = BufferGeometry(layer.num_kv_heads, layer.head_dim, layer.dtype)
        key = counts.get(geometry, 0)
        value = None if layer.key_only else key + 1
        counts[geometry] = key + len(layer.roles)
        raw.append((geometry, key, value))
    order = sorted(counts, key=lambda g: -g.bytes_per_token() * counts[g])  # stable: ties keep first-seen
    pools = tuple(PoolGeometry(g, counts[g]) for g in order)
    return pools, [(order.index(g), key, value) for g, key, value in raw]
