"""KvStorage: the pool groups' free lists plus every open KvCache, with the invariants tests check."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from kvengine.errors import CacheError
from kvengine.lifecycle import CacheLayout
from kvengine.pool import BlockPool
from kvengine.request import KvCache


class KvStorage:
    """Owns one BlockPool per pool group and the open caches that draw from them."""

    def __init__(self, layout: CacheLayout, slots_per_group: Sequence[int]) -> None:
        if len(slots_per_group) != len(layout.groups):
            raise CacheError(
                f"expected one slot count per pool group ({len(layout.groups)}), found {len(slots_per_group)}."
            )
        self.layout = layout
        self.pools = [BlockPool(n) for n in slots_per_group]
        self._open: dict[int, KvCache] = {}

    def new_cache(self) -> KvCache:
        """An empty cache (capacity 0); grow it with `resize`."""
        cache = KvCache(self.layout, self.pools, self._forget)
        self._open[id(cache)] = cache
        return cache

    @property
    def open_caches(self) -> list[KvCache]:
        return list(self._open.values())

    def num_free_slots(self) -> tuple[int, ...]:
        return tuple(pool.num_free for pool in self.pools)

    def num_total_slots(self) -> tuple[int, ...]:
        return tuple(pool.num_slots for pool in self.pools)

    def check_invariants(self) -> None:
        """free + used == total per group; every used slot belongs to exactly one open cache (no leaks)."""
        for group in self.layout.groups:
            pool = self.pools[group.group_id]
            if pool.num_free + pool.num_used != pool.num_slots or not pool.free_list_is_consistent():
                raise CacheError(
                    f"pool group {group.group_id}: free {pool.num_free} + used {pool.num_used} != total "
                    f"{pool.num_slots} or the free list has duplicates."
                )
            held: Counter[int] = Counter()
            for cache in self._open.values():
                for lc in group.life_cycle_ids:
                    held.update(cache.held_slots(lc))
            doubled = sorted(slot for slot, n in held.items() if n > 1)
            if doubled:
                raise CacheError(f"pool group {group.group_id}: slots {doubled} are held twice.")
            used = pool.used_slots()
            if set(held) != used:
                leaked = sorted(used - set(held))
                raise CacheError(
                    f"pool group {group.group_id}: used slots held by no cache {leaked}, held but free "
                    f"{sorted(set(held) - used)}."
                )

    def _forget(self, cache: KvCache) -> None:
        self._open.pop(id(cache), None)
