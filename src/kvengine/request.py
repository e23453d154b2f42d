"""KvCache: one request's block tables per life cycle; `resize(capacity, history)` is its only mutation.

Block table of a life cycle: entry i holds the slot of block i (tokens [i*B, (i+1)*B)) or NO_SLOT
when the block is stale (slid out of the window) or never needed one.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from kvengine.errors import CacheError
from kvengine.lifecycle import CacheLayout, ceil_div
from kvengine.pool import BlockPool

NO_SLOT = -1
_SERIALS = itertools.count()


@dataclass(frozen=True)
class GroupShortfall:
    """A resize that cannot happen: pool group `group_id` needs more free slots than it has."""

    group_id: int
    needed_slots: int
    available_slots: int


@dataclass
class _Diff:
    release: list[list[int]]  # per life cycle: block indices whose slots are freed
    grow: list[tuple[int, int]]  # per life cycle: (first new block index, new length)
    need: list[int]  # per life cycle: new slots to take
    stale_end: list[int]


class KvCache:
    """A request's KV blocks. Create through `KvStorage.new_cache()`; close it to free its blocks."""

    def __init__(self, layout: CacheLayout, pools: list[BlockPool], on_close: Callable[[KvCache], None]):
        self._layout = layout
        self._pools = pools
        self._on_close = on_close
        self.tables: list[list[int]] = [[] for _ in layout.life_cycles]
        self._stale_end = [lc.sink_blocks for lc in layout.life_cycles]  # blocks [sinks, end) are released
        self.capacity_tokens = 0
        self.history_tokens = 0
        self.serial = next(_SERIALS)  # unique per cache, unlike id() which is reused after close
        self.version = 0  # bumps whenever a table changes (lets the torch side re-upload rows lazily)
        self.closed = False

    def can_resize(self, capacity_tokens: int, history_tokens: int) -> bool:
        return not self.shortfall(capacity_tokens, history_tokens)

    def shortfall(self, capacity_tokens: int, history_tokens: int) -> tuple[GroupShortfall, ...]:
        """The pool groups that lack free slots for this resize (empty when it fits)."""
        self._check(capacity_tokens, history_tokens)
        return self._shortfall(self._diff(capacity_tokens, history_tokens))

    def resize(self, capacity_tokens: int, history_tokens: int) -> bool:
        """Grow or shrink to `capacity_tokens` and advance history; False (no change) when slots are short.

        Blocks that go stale are released before new ones are taken, so one call never over-allocates.
        """
        self._check(capacity_tokens, history_tokens)
        diff = self._diff(capacity_tokens, history_tokens)
        if self._shortfall(diff):
            return False
        changed = False
        for lc_id, table in enumerate(self.tables):
            pool = self._pools[self._layout.group_of(lc_id)]
            if diff.release[lc_id]:
                pool.release(table[i] for i in diff.release[lc_id])
                for i in diff.release[lc_id]:
                    table[i] = NO_SLOT
                changed = True
            start, new_len = diff.grow[lc_id]
            changed |= len(table) > new_len
            del table[new_len:]
            if start < new_len:
                fresh = pool.allocate(diff.need[lc_id])
                assert fresh is not None  # _shortfall checked every group
                fresh.reverse()
                sinks, first_live = self._layout.life_cycles[lc_id].sink_blocks, diff.stale_end[lc_id]
                table.extend(NO_SLOT if sinks <= i < first_live else fresh.pop() for i in range(start, new_len))
                changed = True
            self._stale_end[lc_id] = diff.stale_end[lc_id]
        self.capacity_tokens, self.history_tokens = capacity_tokens, history_tokens
        self.version += changed
        return True

    def close(self) -> None:
        """Free every block; closing twice is an error (it would be a double free)."""
        if self.closed:
            raise CacheError("this KV cache is already closed (closing it again would double free).")
        for lc_id, table in enumerate(self.tables):
            self._pools[self._layout.group_of(lc_id)].release(s for s in table if s != NO_SLOT)
            table.clear()
        self.closed = True
        self.version += 1
        self._on_close(self)

    def held_slots(self, life_cycle_id: int) -> list[int]:
        return [s for s in self.tables[life_cycle_id] if s != NO_SLOT]

    def _check(self, capacity_tokens: int, history_tokens: int) -> None:
        if self.closed:
            raise CacheError("resize on a closed KV cache.", hint="create a new cache for a new request")
        if not 0 <= history_tokens <= capacity_tokens:
            raise CacheError(
                f"resize needs 0 <= history <= capacity, found history {history_tokens} and capacity "
                f"{capacity_tokens}.",
                hint="capacity counts the tokens being processed too",
            )
        if history_tokens < self.history_tokens:
            raise CacheError(
                f"history may only grow, found {history_tokens} after {self.history_tokens}.",
                hint="shrink capacity instead; history tokens are already consumed",
            )

    def _diff(self, capacity_tokens: int, history_tokens: int) -> _Diff:
        tpb = self._layout.tokens_per_block
        new_len = ceil_div(capacity_tokens, tpb)
        diff = _Diff([], [], [], [])
        for lc_id, cycle in enumerate(self._layout.life_cycles):
            table = self.tables[lc_id]
            old_end = self._stale_end[lc_id]
            stale = cycle.stale_blocks(history_tokens, tpb)
            stale_end = max(old_end, stale.stop) if stale else old_end
            # newly stale blocks, plus blocks beyond the new length when capacity shrinks
            gone = sorted(set(range(old_end, min(stale_end, len(table)))) | set(range(new_len, len(table))))
            start = min(len(table), new_len)
            diff.release.append([i for i in gone if table[i] != NO_SLOT])
            diff.grow.append((start, new_len))
            diff.need.append(sum(1 for i in range(start, new_len) if not cycle.sink_blocks <= i < stale_end))
            diff.stale_end.append(stale_end)
        return diff

    def _shortfall(self, diff: _Diff) -> tuple[GroupShortfall, ...]:
        short = []
        for group in self._layout.groups:
            need = sum(diff.need[lc] for lc in group.life_cycle_ids)
            available = self._pools[group.group_id].num_free + sum(
                len(diff.release[lc]) for lc in group.life_cycle_ids
            )
            if need > available:
                short.append(GroupShortfall(group.group_id, need, available))
        return tuple(short)
