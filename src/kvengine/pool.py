"""BlockPool: the free list of one pool group's slots (pure bookkeeping, no tensors)."""

from __future__ import annotations

from collections.abc import Iterable

from kvengine.errors import CacheError


class BlockPool:
    """Slots `0 .. num_slots-1` of one pool group; `allocate` hands out free slots, `release` returns them."""

    def __init__(self, num_slots: int) -> None:
        if num_slots < 0:
            raise CacheError(f"a pool needs num_slots >= 0, found {num_slots!r}.")
        self.num_slots = num_slots
        self._free = list(range(num_slots - 1, -1, -1))  # pop() hands out low slot ids first
        self._is_free = bytearray(b"\x01" * num_slots)

    @property
    def num_free(self) -> int:
        return len(self._free)

    @property
    def num_used(self) -> int:
        return self.num_slots - len(self._free)

    def can_allocate(self, num_blocks: int) -> bool:
        return num_blocks <= len(self._free)

    def allocate(self, num_blocks: int) -> list[int] | None:
        """`num_blocks` free slots, or None (and nothing taken) when fewer are free."""
        if not self.can_allocate(num_blocks):
            return None
        slots = [self._free.pop() for _ in range(num_blocks)]
        for slot in slots:
            self._is_free[slot] = 0
        return slots

    def release(self, slots: Iterable[int]) -> None:
        """Return slots to the free list; a slot that is out of range or already free is an error."""
        for slot in slots:
            if not 0 <= slot < self.num_slots:
                raise CacheError(f"slot {slot!r} is outside the pool of {self.num_slots} slots.")
            if self._is_free[slot]:
                raise CacheError(f"double free of slot {slot!r} (already free).")
            self._is_free[slot] = 1
            self._free.append(slot)

    def used_slots(self) -> set[int]:
        return {slot for slot in range(self.num_slots) if not self._is_free[slot]}

    def free_list_is_consistent(self) -> bool:
        """The free list holds each free slot exactly once and nothing else."""
        return len(set(self._free)) == len(self._free) and all(self._is_free[s] for s in self._free) and (
            sum(self._is_free) == len(self._free)
        )
