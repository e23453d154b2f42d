from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvengine.errors import CacheError
from kvengine.pool import BlockPool
from kvengine.request import NO_SLOT, GroupShortfall
from kvengine.storage import KvStorage


def test_pool_allocates_all_or_nothing() -> None:
    pool = BlockPool(3)
    assert pool.allocate(2) == [0, 1]
    assert pool.allocate(2) is None and pool.num_free == 1
    pool.release([0])
    assert (pool.num_free, pool.num_used) == (2, 1)


@pytest.mark.parametrize(
    ("slots", "message"),
    [
        pytest.param([1], "double free of slot 1 (already free).", id="double-free"),
        pytest.param([7], "slot 7 is outside the pool of 2 slots.", id="out-of-range"),
    ],
)
def test_pool_release_errors(slots: list[int], message: str) -> None:
    pool = BlockPool(2)
    pool.allocate(1)
    with pytest.raises(CacheError) as info:
        pool.release(slots)
    assert str(info.value) == message


def test_sliding_blocks_are_released_as_history_grows(make_layout) -> None:
    storage = KvStorage(make_layout([8, None], tokens_per_block=4), [16])
    cache = storage.new_cache()
    assert cache.resize(12, 0)
    assert [len(cache.held_slots(0)), len(cache.held_slots(1))] == [3, 3]
    assert cache.resize(13, 12)  # live window [5, 12] -> block 0 stale
    assert cache.tables[0][0] == NO_SLOT and len(cache.held_slots(0)) == 3
    assert len(cache.held_slots(1)) == 4
    storage.check_invariants()
    cache.close()
    storage.check_invariants()
    assert storage.num_free_slots() == (16,)


def test_resize_is_all_or_nothing_across_groups(make_layout) -> None:
    storage = KvStorage(make_layout([8] * 2 + [None], tokens_per_block=4), [10, 2])
    cache = storage.new_cache()
    assert not cache.resize(12, 0)
    assert cache.shortfall(12, 0) == (GroupShortfall(group_id=1, needed_slots=3, available_slots=2),)
    assert storage.num_free_slots() == (10, 2) and cache.capacity_tokens == 0
    storage.check_invariants()


def test_released_stale_blocks_count_toward_the_same_resize(make_layout) -> None:
    storage = KvStorage(make_layout([4], tokens_per_block=4), [1])  # one slot: a window of 4 fits one block
    cache = storage.new_cache()
    assert cache.resize(8, 7)  # live window [4, 7]: block 1 only
    assert cache.tables[0] == [NO_SLOT, 0]
    assert cache.resize(12, 11)  # block 1 goes stale in the same call that needs block 2
    assert cache.tables[0] == [NO_SLOT, NO_SLOT, 0]
    storage.check_invariants()


def test_shrinking_capacity_frees_tail_blocks(make_layout) -> None:
    storage = KvStorage(make_layout([None], tokens_per_block=4), [8])
    cache = storage.new_cache()
    assert cache.resize(16, 4)
    assert cache.resize(6, 5)
    assert len(cache.held_slots(0)) == 2 and storage.num_free_slots() == (6,)
    storage.check_invariants()


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [
        pytest.param((8, 4), (8, 3), "history may only grow, found 3 after 4.", id="history-shrinks"),
        pytest.param(
            (8, 4), (3, 4), "resize needs 0 <= history <= capacity, found history 4 and capacity 3.", id="cap-lt-hist"
        ),
    ],
)
def test_resize_rejects_misuse(make_layout, first: tuple[int, int], second: tuple[int, int], message: str) -> None:
    cache = KvStorage(make_layout([None]), [8]).new_cache()
    assert cache.resize(*first)
    with pytest.raises(CacheError) as info:
        cache.resize(*second)
    assert str(info.value).startswith(message)


def test_closing_twice_is_an_error(make_layout) -> None:
    cache = KvStorage(make_layout([None]), [8]).new_cache()
    cache.close()
    with pytest.raises(CacheError, match="already closed"):
        cache.close()


def test_invariant_check_detects_a_leak(make_layout) -> None:
    storage = KvStorage(make_layout([None]), [4])
    storage.pools[0].allocate(1)  # taken behind the caches' back
    with pytest.raises(CacheError, match=r"used slots held by no cache \[0\]"):
        storage.check_invariants()


# An operation: (request index, kind, amount). Kinds: grow capacity, advance history, shrink, close.
_ops = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(["grow", "advance", "shrink", "close"]), st.integers(0, 20)),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=_ops,
    windows=st.sampled_from([[8, None], [5, 5, None], [4], [None, 12, 12]]),
    sinks=st.sampled_from([0, 4]),
    slots=st.lists(st.integers(0, 12), min_size=3, max_size=3),
)
def test_random_resizes_keep_invariants(make_layout, ops, windows, sinks, slots) -> None:
    layout = make_layout(windows, tokens_per_block=4, sink_tokens=sinks)
    storage = KvStorage(layout, slots[: len(layout.groups)])
    caches = [storage.new_cache() for _ in range(4)]
    broken: list[tuple[int, str]] = []  # (op index, what broke): empty when every step kept its promises
    for step, (index, kind, amount) in enumerate(ops):
        cache = caches[index]
        if cache.closed:
            caches[index] = cache = storage.new_cache()
        cap, hist = cache.capacity_tokens, cache.history_tokens
        if kind == "close":
            cache.close()
        else:
            new = {
                "grow": (cap + amount, hist),
                "advance": (cap + amount, min(cap + amount, hist + amount)),
                "shrink": (max(hist, cap - amount), hist),
            }[kind]
            free_before = storage.num_free_slots()
            refused = not cache.resize(*new)
            if refused and (storage.num_free_slots(), cache.capacity_tokens, cache.history_tokens) != (
                free_before,
                cap,
                hist,
            ):
                broken.append((step, f"a refused {kind} changed the cache or the free slots"))
        storage.check_invariants()  # raises, naming the broken invariant, after the step that broke it
        if not cache.closed:
            held = [len(cache.held_slots(lc_id)) for lc_id in range(len(layout.life_cycles))]
            live = [c.live_blocks(cache.capacity_tokens, cache.history_tokens, 4) for c in layout.life_cycles]
            if held != live:
                broken.append((step, f"{kind} left the cache holding {held} blocks per life cycle, not {live}"))
    assert broken == []
    for cache in caches:
        if not cache.closed:
            cache.close()
    storage.check_invariants()
    assert storage.num_free_slots() == storage.num_total_slots()
