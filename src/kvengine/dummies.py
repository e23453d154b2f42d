"""Dummy requests for CUDA-graph warmup and padding, with ONE accounting function for their size.

`dummy_shape` is the only place that says how many tokens a dummy holds:

    generation dummy of token_num t:  history = t - 1,  capacity = t + extra + draft
    context dummy of token_num t:     history = 0,      capacity = t + extra

`t` already counts the current step's input token (history + 1), so no further +1 is added; and
`get_num_available_tokens` asks `dummy_shape` too, so a dummy sized from it fits exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvengine.request import GroupShortfall, KvCache
from kvengine.slots import KvCacheDesc, request_slots
from kvengine.storage import KvStorage


@dataclass(frozen=True)
class DummyAccounting:
    """Extra KV tokens every request carries and draft tokens a generation step reserves."""

    num_extra_kv_tokens: int = 0
    num_draft_tokens: int = 0


def dummy_shape(token_num: int, *, is_gen: bool, accounting: DummyAccounting) -> KvCacheDesc:
    """Capacity and history of a dummy whose past KV plus current input is `token_num` tokens."""
    if is_gen:
        capacity = token_num + accounting.num_extra_kv_tokens + accounting.num_draft_tokens
        return KvCacheDesc(capacity, token_num - 1)
    return KvCacheDesc(token_num + accounting.num_extra_kv_tokens, 0)


def get_num_available_tokens(
    storage: KvStorage, *, upper_tokens: int, is_gen: bool, accounting: DummyAccounting, batch_size: int = 1
) -> int:
    """The largest token_num <= upper_tokens whose dummy fits in the free slots (0 when none does).

    `batch_size - 1` minimal dummies (token_num 1) are reserved first. The answer always fits: it is
    found by bisection on the exact slot count of `dummy_shape`, never by an estimate.
    """
    free = list(storage.num_free_slots())
    minimal = request_slots(storage.layout, dummy_shape(1, is_gen=is_gen, accounting=accounting))
    for g, n in enumerate(minimal):
        free[g] -= n * (batch_size - 1)

    def fits(token_num: int) -> bool:
        shape = dummy_shape(token_num, is_gen=is_gen, accounting=accounting)
        return all(n <= f for n, f in zip(request_slots(storage.layout, shape), free, strict=True))

    if upper_tokens < 1 or not fits(1):
        return 0
    if fits(upper_tokens):
        return upper_tokens
    low, high = 1, upper_tokens  # fits(low), not fits(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low


@dataclass(frozen=True)
class DummyShortage:
    """Why a dummy batch could not be allocated: the request index and the short pool groups."""

    request_index: int
    token_num: int
    shortfalls: tuple[GroupShortfall, ...]

    def describe(self, storage: KvStorage) -> str:
        parts = ", ".join(
            f"pool group {s.group_id} ({storage.layout.group_label(s.group_id)}) needs {s.needed_slots} "
            f"slots, {s.available_slots} free"
            for s in self.shortfalls
        )
        return f"dummy {self.request_index} of {self.token_num} tokens does not fit: {parts}"


def add_dummy_requests(
    storage: KvStorage, token_nums: Sequence[int], *, is_gen: bool, accounting: DummyAccounting
) -> list[KvCache] | DummyShortage:
    """All dummies, or (after releasing the ones already made) the first shortage."""
    made: list[KvCache] = []
    for index, token_num in enumerate(token_nums):
        shape = dummy_shape(token_num, is_gen=is_gen, accounting=accounting)
        cache = storage.new_cache()
        if not cache.resize(shape.capacity_tokens, shape.history_tokens):
            shortfalls = cache.shortfall(shape.capacity_tokens, shape.history_tokens)
            cache.close()
            release_dummies(made)
            return DummyShortage(index, token_num, shortfalls)
        made.append(cache)
    return made


def release_dummies(caches: Sequence[KvCache]) -> None:
    for cache in caches:
        if not cache.closed:
            cache.close()
