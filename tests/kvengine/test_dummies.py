from __future__ import annotations

import pytest

from kvengine.dummies import (
    DummyAccounting,
    DummyShortage,
    add_dummy_requests,
    dummy_shape,
    get_num_available_tokens,
)
from kvengine.request import GroupShortfall
from kvengine.slots import KvCacheDesc
from kvengine.storage import KvStorage


@pytest.mark.parametrize(
    ("token_num", "is_gen", "accounting", "shape"),
    [
        pytest.param(2, True, DummyAccounting(), KvCacheDesc(2, 1), id="gen-no-draft-no-duplicate-token"),
        pytest.param(1, True, DummyAccounting(1, 3), KvCacheDesc(5, 0), id="gen-short-dummy"),
        pytest.param(100, True, DummyAccounting(2, 4), KvCacheDesc(106, 99), id="gen-long-dummy"),
        pytest.param(100, False, DummyAccounting(2, 4), KvCacheDesc(102, 0), id="context-ignores-draft"),
    ],
)
def test_dummy_shape(token_num: int, is_gen: bool, accounting: DummyAccounting, shape: KvCacheDesc) -> None:
    assert dummy_shape(token_num, is_gen=is_gen, accounting=accounting) == shape


def _legacy_v2_allocation(storage: KvStorage, token_num: int, accounting: DummyAccounting) -> bool:
    """The old generation dummy: capacity token_num + extra, then + draft + 1 (the duplicate token)."""
    cache = storage.new_cache()
    history = token_num - 1
    ok = cache.resize(token_num + accounting.num_extra_kv_tokens, history) and cache.resize(
        cache.capacity_tokens + accounting.num_draft_tokens + 1, history
    )
    cache.close()
    return ok


@pytest.mark.parametrize("draft", [pytest.param(0, id="draft0"), pytest.param(4, id="draft4")])
@pytest.mark.parametrize(
    ("accounting_kind", "fits"),
    [
        pytest.param("one-accounting", True, id="one-accounting"),
        pytest.param("duplicate-plus-one", False, id="duplicate-plus-one"),
    ],
)
def test_generation_dummy_at_a_page_boundary(make_layout, draft: int, accounting_kind: str, fits: bool) -> None:
    """Regression: available tokens (pool-bound, a block multiple) must hold the dummy allocated from them."""
    storage = KvStorage(make_layout([None], tokens_per_block=4), [10])
    accounting = DummyAccounting(num_extra_kv_tokens=0, num_draft_tokens=draft)
    token_num = get_num_available_tokens(storage, upper_tokens=1000, is_gen=True, accounting=accounting)
    assert token_num + draft == 40  # exactly the 10 free blocks: the page boundary
    if accounting_kind == "duplicate-plus-one":
        assert _legacy_v2_allocation(storage, token_num, accounting) is fits
        return
    made = add_dummy_requests(storage, [token_num], is_gen=True, accounting=accounting)
    assert not isinstance(made, DummyShortage)
    assert made[0].capacity_tokens == token_num + draft and storage.num_free_slots() == (0,)
    storage.check_invariants()


@pytest.mark.parametrize("slots", range(14), ids=lambda slots: f"{slots}-slots")
@pytest.mark.parametrize("draft", [0, 3])
@pytest.mark.parametrize("windows", [pytest.param([8, 8, None], id="hybrid"), pytest.param([6, 6], id="all-sliding")])
def test_available_tokens_always_fit(make_layout, windows: list[int | None], draft: int, slots: int) -> None:
    """What get_num_available_tokens offers, add_dummy_requests places; with nothing offered, one token is short."""
    layout = make_layout(windows, tokens_per_block=4)
    storage = KvStorage(layout, [slots] * len(layout.groups))
    accounting = DummyAccounting(num_extra_kv_tokens=1, num_draft_tokens=draft)
    token_num = get_num_available_tokens(storage, upper_tokens=200, is_gen=True, accounting=accounting)
    made = add_dummy_requests(storage, [token_num or 1], is_gen=True, accounting=accounting)
    assert isinstance(made, list if token_num else DummyShortage), token_num


def test_available_tokens_reserve_minimal_requests_for_the_batch(make_layout) -> None:
    storage = KvStorage(make_layout([None], tokens_per_block=4), [10])
    accounting = DummyAccounting()
    assert get_num_available_tokens(storage, upper_tokens=100, is_gen=True, accounting=accounting, batch_size=4) == 28


def test_failed_batch_releases_the_dummies_it_made(make_layout) -> None:
    storage = KvStorage(make_layout([8, 8, None], tokens_per_block=4), [4, 4])
    made = add_dummy_requests(storage, [1, 1, 1, 1, 20], is_gen=True, accounting=DummyAccounting())
    assert made == DummyShortage(4, 20, (GroupShortfall(0, 2, 0), GroupShortfall(1, 5, 0)))
    assert storage.num_free_slots() == (4, 4) and storage.open_caches == []
    assert made.describe(storage) == (
        "dummy 4 of 20 tokens does not fit: pool group 0 (window 8) needs 2 slots, 0 free, "
        "pool group 1 (full) needs 5 slots, 0 free"
    )
