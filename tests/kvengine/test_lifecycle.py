from __future__ import annotations

import pytest

from kvengine.lifecycle import LifeCycle, build_layout
from kvengine.spec import LayerSpec


@pytest.mark.parametrize(
    ("cycle", "history", "tpb", "stale"),
    [
        pytest.param(LifeCycle(1024), 2048, 32, range(0, 32), id="notes-example-w1024-h2048"),
        pytest.param(LifeCycle(1024), 1023, 32, range(0, 0), id="window-not-yet-full"),
        pytest.param(LifeCycle(1024), 1055, 32, range(0, 1), id="first-block-just-stale"),
        pytest.param(LifeCycle(1024), 1054, 32, range(0, 0), id="first-block-still-live"),
        pytest.param(LifeCycle(None), 10_000, 32, range(0, 0), id="full-attention-never-stale"),
        pytest.param(LifeCycle(8, sink_blocks=1), 20, 4, range(1, 3), id="sink-block-kept"),
        pytest.param(LifeCycle(8, sink_blocks=2), 3, 4, range(1, 1), id="sinks-still-filling"),
    ],
)
def test_stale_blocks(cycle: LifeCycle, history: int, tpb: int, stale: range) -> None:
    assert cycle.stale_blocks(history, tpb) == stale


@pytest.mark.parametrize(
    ("cycle", "capacity", "history", "live"),
    [
        pytest.param(LifeCycle(1024), 2049, 2048, 33, id="fallback-request-swa"),
        pytest.param(LifeCycle(None), 2049, 2048, 65, id="fallback-request-full"),
        pytest.param(LifeCycle(1024), 32768, 32767, 32, id="long-decode-swa"),
        pytest.param(LifeCycle(1024), 8192, 0, 256, id="fresh-prefill-holds-all"),
    ],
)
def test_live_blocks(cycle: LifeCycle, capacity: int, history: int, live: int) -> None:
    assert cycle.live_blocks(capacity, history, 32) == live


@pytest.mark.parametrize(
    ("window", "tpb", "floor"),
    [pytest.param(1024, 32, 33, id="w1024"), pytest.param(8, 4, 3, id="w8"), pytest.param(5, 4, 2, id="w5")],
)
def test_window_floor_blocks(window: int, tpb: int, floor: int) -> None:
    assert LifeCycle(window).window_floor_blocks(tpb) == floor


def test_equal_geometry_and_count_share_a_pool_group(make_layout) -> None:
    layout = make_layout([8, None, 8, None], tokens_per_block=4)
    assert [c.window_tokens for c in layout.life_cycles] == [8, None]
    assert len(layout.groups) == 1 and layout.groups[0].life_cycle_ids == (0, 1)


def test_different_layer_counts_get_separate_groups(make_layout) -> None:
    layout = make_layout([1024] * 5 + [None], tokens_per_block=32)
    assert [g.life_cycle_ids for g in layout.groups] == [(0,), (1,)]
    assert layout.slot_bytes(0) == 5 * 2 * 4 * 4 * 32 and layout.slot_bytes(1) == 2 * 4 * 4 * 32


def test_placements_address_key_and_value_buffers() -> None:
    layers = (
        LayerSpec(2, 8, "float32", 16),
        LayerSpec(1, 64, "bfloat16", None, key_only=True),
        LayerSpec(2, 8, "float32", 16),
    )
    layout = build_layout(layers, [16, None, 16], tokens_per_block=4)
    assert [(p.life_cycle_id, p.group_id, p.pool_index, p.key_buffer, p.value_buffer) for p in layout.placements] == [
        (0, 0, 0, 0, 1),
        (1, 1, 0, 0, None),
        (0, 0, 0, 2, 3),
    ]


def test_mixed_geometry_in_one_life_cycle_makes_two_pools_largest_first() -> None:
    layers = (LayerSpec(1, 4, "float32", None), LayerSpec(4, 8, "float32", None))
    layout = build_layout(layers, [None, None], tokens_per_block=4)
    pools = layout.groups[0].pools
    assert [(p.buffer.num_kv_heads, p.num_buffers) for p in pools] == [(4, 2), (1, 2)]
    assert [(p.pool_index, p.key_buffer) for p in layout.placements] == [(1, 0), (0, 0)]
