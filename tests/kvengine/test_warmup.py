from __future__ import annotations

import logging

import pytest

from kvengine.dummies import DummyAccounting
from kvengine.errors import ConfigError
from kvengine.padding import (
    EAGER_DISABLED,
    EAGER_NO_GRAPH,
    EAGER_NO_PADDING_DUMMY,
    DecodeRouter,
    StepRoute,
    padding_can_occur,
    preallocate_padding_dummy,
)
from kvengine.request import KvCache
from kvengine.storage import KvStorage
from kvengine.warmup import capture_sizes, default_capture_sizes, run_warmup


@pytest.mark.parametrize(
    ("max_batch_size", "sizes"),
    [
        pytest.param(1, (1,), id="bs1"),
        pytest.param(8, (1, 2, 4, 8), id="bs8"),
        pytest.param(6, (1, 2, 4, 6), id="bs6-keeps-max"),
        pytest.param(256, (1, 2, 4, 8, 16, 32, 64, 128, 256), id="bs256"),
    ],
)
def test_default_capture_sizes(max_batch_size: int, sizes: tuple[int, ...]) -> None:
    assert default_capture_sizes(max_batch_size) == sizes


def test_configured_capture_sizes_are_filtered_and_sorted() -> None:
    assert capture_sizes([8, 3, 1, 500], max_batch_size=8) == (1, 3, 8)


def test_configured_capture_sizes_above_max_batch_size_are_an_error() -> None:
    with pytest.raises(ConfigError) as info:
        capture_sizes([16, 32], max_batch_size=8)
    assert str(info.value) == (
        "no CUDA-graph batch size <= max_batch_size 8, found [16, 32]. "
        "Hint: list sizes up to max_batch_size or leave cuda_graph_batch_sizes unset"
    )


def test_warmup_captures_largest_first_with_one_long_dummy(make_layout) -> None:
    storage = KvStorage(make_layout([8, 8, None], tokens_per_block=4), [40, 40])
    seen: list[tuple[int, list[int]]] = []

    def capture(batch_size: int, dummies: list[KvCache]) -> None:
        storage.check_invariants()
        seen.append((batch_size, [d.capacity_tokens for d in dummies]))

    result = run_warmup(storage, sizes=(1, 2, 4), max_seq_len=64, accounting=DummyAccounting(), capture=capture)
    assert [bs for bs, _ in seen] == [4, 2, 1]
    assert seen[0][1] == [64, 1, 1, 1]  # long dummy first, capped at max_seq_len
    assert result.captured_sizes == (1, 2, 4) and result.coverage == 1.0
    assert storage.num_free_slots() == (40, 40) and storage.open_caches == []


def test_size_without_room_is_skipped_with_one_warning(make_layout, caplog: pytest.LogCaptureFixture) -> None:
    storage = KvStorage(make_layout([8, 8, None], tokens_per_block=4), [3, 40])
    with caplog.at_level(logging.WARNING, logger="kvengine"):
        result = run_warmup(storage, sizes=(1, 2, 4, 8), max_seq_len=64, accounting=DummyAccounting())
    assert result.captured_sizes == (1, 2) and result.skipped_sizes == (4, 8)
    assert result.coverage == 0.5
    assert [r.getMessage() for r in caplog.records] == [
        "Skipping CUDA graph warmup for batch size 8: not enough KV cache space for the short dummies "
        "(dummy 3 of 1 tokens does not fit: pool group 0 (window 8) needs 1 slots, 0 free)",
        "Skipping CUDA graph warmup for batch size 4: not enough KV cache space for the long dummy "
        "(free slots group 0: 0, group 1: 37 after 3 short dummies)",
    ]
    assert storage.num_free_slots() == (3, 40)


@pytest.mark.parametrize(
    ("captured", "can_pad"),
    [
        pytest.param((), False, id="none"),
        pytest.param((1,), False, id="only-1"),
        pytest.param((1, 2, 3), False, id="contiguous"),
        pytest.param((1, 2, 4), True, id="gap-at-3"),
    ],
)
def test_padding_can_occur(captured: tuple[int, ...], can_pad: bool) -> None:
    assert padding_can_occur(captured) is can_pad


def test_padding_dummy_that_does_not_fit_is_warned_once(make_layout, caplog: pytest.LogCaptureFixture) -> None:
    storage = KvStorage(make_layout([None], tokens_per_block=4), [0])
    with caplog.at_level(logging.WARNING, logger="kvengine"):
        dummy = preallocate_padding_dummy(storage, captured_sizes=(1, 4), accounting=DummyAccounting())
    assert dummy is None and len(caplog.records) == 1
    assert "padded batches fall back to eager mode" in caplog.records[0].getMessage()


@pytest.mark.parametrize(
    ("batch_size", "has_dummy", "enabled", "route"),
    [
        pytest.param(4, True, True, StepRoute(4, 4, 0), id="exact-size"),
        pytest.param(3, True, True, StepRoute(3, 4, 1), id="pads-to-next"),
        pytest.param(3, False, True, StepRoute(3, None, 0, EAGER_NO_PADDING_DUMMY), id="no-padding-dummy"),
        pytest.param(9, True, True, StepRoute(9, None, 0, EAGER_NO_GRAPH), id="above-largest"),
        pytest.param(2, True, False, StepRoute(2, None, 0, EAGER_DISABLED), id="graphs-disabled"),
    ],
)
def test_router(make_layout, batch_size: int, has_dummy: bool, enabled: bool, route: StepRoute) -> None:
    dummy = KvStorage(make_layout([None]), [1]).new_cache() if has_dummy else None
    assert DecodeRouter((1, 2, 4, 8), padding_dummy=dummy, enabled=enabled).route(batch_size) == route


def test_router_counts_steps(make_layout) -> None:
    router = DecodeRouter((1, 4), padding_dummy=KvStorage(make_layout([None]), [1]).new_cache())
    for batch_size in (1, 3, 4, 5, 5):
        router.route(batch_size)
    metrics = router.metrics()
    assert (metrics.graph_steps, metrics.eager_steps, metrics.padded_steps) == (3, 2, 1)
    assert metrics.eager_reasons == {EAGER_NO_GRAPH: 2}
