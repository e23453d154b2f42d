"""The Gemma regression on CPU: defaulting the typical length to max_seq_len starves the sliding pool.

Budget 4 GiB, gemma-like preset (50 sliding layers of window 1024 + 10 full layers, max_batch_size 256).
"""

from __future__ import annotations

import dataclasses

import pytest

from kvengine.config import KvCacheConfig
from kvengine.loader import load_preset
from kvengine.padding import EAGER_NO_GRAPH, DecodeRouter
from kvengine.plan import make_plan
from kvengine.quota import GIB
from kvengine.storage import KvStorage

ALL_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _plan(avg_seq_len: int | None):
    spec = load_preset("gemma-like")
    return make_plan(spec, KvCacheConfig(avg_seq_len=avg_seq_len), budget_bytes=4 * GIB)


def test_default_sizing_warms_up_every_capture_size() -> None:
    plan = _plan(None)
    assert plan.sizing.pools.ratio_source == "fallback"
    assert plan.warmup.captured_sizes == ALL_SIZES and plan.warmup.skipped_sizes == ()
    assert plan.sizing.pools.groups[0].num_slots >= 256 and plan.padding_dummy_ok


def test_old_behaviour_starves_the_sliding_pool_and_skips_large_sizes() -> None:
    spec = load_preset("gemma-like")
    plan = _plan(spec.runtime.max_seq_len)  # the old default: typical length = max_seq_len
    assert plan.sizing.pools.groups[0].num_slots < 128
    assert plan.warmup.captured_sizes == (1, 2, 4, 8, 16, 32, 64)
    assert plan.warmup.skipped_sizes == (128, 256)


@pytest.mark.parametrize(
    ("avg_seq_len", "graph_size"),
    [pytest.param(None, 128, id="default-pads-to-128"), pytest.param(32768, None, id="old-runs-eager")],
)
def test_batch_of_80_decodes_with_a_graph_only_under_default_sizing(
    avg_seq_len: int | None, graph_size: int | None
) -> None:
    plan = _plan(avg_seq_len)
    dummy = KvStorage(plan.sizing.layout, plan.sizing.pools.num_slots).new_cache()
    router = DecodeRouter(plan.warmup.captured_sizes, padding_dummy=dummy)
    route = router.route(80)
    assert route.graph_size == graph_size
    assert router.metrics().eager_steps == (graph_size is None)
    if graph_size is None:
        assert route.eager_reason == EAGER_NO_GRAPH


def test_preset_reproduces_the_pinned_shares() -> None:
    spec = load_preset("gemma-like")
    limits = dataclasses.replace(spec.runtime, max_num_tokens=8192)
    config = KvCacheConfig(grain_bytes=1)
    default = make_plan(spec, config, budget_bytes=200 * GIB, limits=limits)
    old = make_plan(spec, dataclasses.replace(config, avg_seq_len=32768), budget_bytes=200 * GIB, limits=limits)
    assert default.sizing.pools.groups[0].share == pytest.approx(0.717, abs=0.0006)
    assert old.sizing.pools.groups[0].share == pytest.approx(0.139, abs=0.0006)


@pytest.mark.parametrize(
    ("avg_seq_len", "fits"),
    [pytest.param(None, 13, id="default"), pytest.param(32768, 2, id="old")],
)
def test_concurrent_1k_token_sequences(avg_seq_len: int | None, fits: int) -> None:
    """Decoding at 1024 tokens a sequence holds 33 window blocks: the old split admits two of them."""
    plan = _plan(avg_seq_len)
    storage = KvStorage(plan.sizing.layout, plan.sizing.pools.num_slots)
    count = 0
    while storage.new_cache().resize(1025, 1024):
        count += 1
    assert count == fits
