from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvengine.config import KvCacheConfig
from kvengine.errors import ConfigError, SizingError
from kvengine.manager import GenericManager, typical_step
from kvengine.quota import GIB, MIB, gpu_grain_bytes, quota_from_max_tokens, resolve_quota_bytes
from kvengine.sizing import ratio_weights, split_budget
from kvengine.slots import FALLBACK_BATCH, KvCacheDesc, SizingInputs, batch_slots, floor_slots
from kvengine.spec import RuntimeLimits

GEMMA_WINDOWS = [1024] * 50 + [None] * 10
GEMMA_LIMITS = RuntimeLimits(max_seq_len=32768, max_batch_size=256, max_num_tokens=8192)


def _gemma_inputs(avg_seq_len: int | None) -> SizingInputs:
    config = KvCacheConfig(avg_seq_len=avg_seq_len)
    return GenericManager().sizing_inputs(GEMMA_LIMITS, config, max_cuda_graph_batch_size=256)


@pytest.mark.parametrize(
    ("avg_seq_len", "source", "swa_share"),
    [
        pytest.param(None, "fallback", 0.717, id="default-fallback"),
        pytest.param(2048, "typical_step", 0.717, id="typical-2048"),
        pytest.param(8192, "typical_step", 0.391, id="typical-8192"),
        pytest.param(32768, "typical_step", 0.139, id="typical-32768-old-behaviour"),
    ],
)
def test_gemma_sliding_pool_share(make_layout, avg_seq_len: int | None, source: str, swa_share: float) -> None:
    layout = make_layout(GEMMA_WINDOWS, tokens_per_block=32)
    plan = split_budget(layout, _gemma_inputs(avg_seq_len), quota_bytes=GIB, grain_bytes=1, max_util_for_resume=0.95)
    assert plan.ratio_source == source
    assert plan.groups[0].share == pytest.approx(swa_share, abs=0.0006)
    assert plan.total_bytes <= plan.quota_bytes


@pytest.mark.parametrize(
    ("batch", "slots"),
    [
        pytest.param(FALLBACK_BATCH, (33, 65), id="fallback-request"),
        pytest.param(typical_step(GEMMA_LIMITS, 32768), (8416, 261376), id="typical-32768"),
        pytest.param(typical_step(GEMMA_LIMITS, 2048), (8416, 16576), id="typical-2048"),
    ],
)
def test_gemma_batch_slots(make_layout, batch, slots: tuple[int, int]) -> None:
    assert batch_slots(make_layout(GEMMA_WINDOWS, tokens_per_block=32), batch) == slots


@pytest.mark.parametrize(
    ("inputs", "source", "weights"),
    [
        pytest.param(
            SizingInputs(
                pool_ratio=(0.25, 0.75), typical_step=((KvCacheDesc(8, 0),)), constraints=((KvCacheDesc(64, 0),),)
            ),
            "pool_ratio",
            (0.25, 0.75),
            id="ratio-wins",
        ),
        pytest.param(
            SizingInputs(typical_step=(KvCacheDesc(8, 0),), constraints=((KvCacheDesc(64, 63),),)),
            "typical_step",
            (2 / 3, 1 / 3),
            id="typical-beats-constraints",
        ),
        pytest.param(
            SizingInputs(constraints=((KvCacheDesc(64, 63),), (KvCacheDesc(8, 0),))),
            "constraints",
            (0.2, 0.8),
            id="constraints-max-per-group",
        ),
        pytest.param(SizingInputs(), "fallback", (768 / 66432, 65664 / 66432), id="allocator-fallback"),
    ],
)
def test_ratio_precedence(make_layout, inputs: SizingInputs, source: str, weights: tuple[float, ...]) -> None:
    layout = make_layout([8, 8, None], tokens_per_block=4)  # group 0: 2 sliding layers, group 1: 1 full layer
    got, got_source = ratio_weights(layout, inputs, grain_bytes=1)
    assert got_source == source
    assert got == pytest.approx(weights)


def test_floors_that_exceed_the_budget_raise_with_numbers_and_knobs(make_layout) -> None:
    layout = make_layout([8, 8, None], tokens_per_block=4)
    with pytest.raises(SizingError) as info:
        split_budget(layout, SizingInputs(), quota_bytes=1000, grain_bytes=1, max_util_for_resume=0.95)
    assert str(info.value) == (
        "KV-cache pool floors need 1152 bytes but the budget is 1000 bytes (group 0 (window 8) 3 slots, "
        "group 1 (full) 3 slots). Hint: raise the budget (--budget-gib, max_gpu_total_bytes or "
        "free_gpu_memory_fraction) or lower max_num_tokens, max_batch_size, max_seq_len or avg_seq_len"
    )


def test_group_below_its_floor_is_pinned_and_the_rest_goes_to_the_others(make_layout) -> None:
    layout = make_layout([8, 8, None], tokens_per_block=4)
    inputs = SizingInputs(pool_ratio=(0.01, 0.99), constraints=((KvCacheDesc(40, 0),),))
    plan = split_budget(layout, inputs, quota_bytes=256 * 100, grain_bytes=1, max_util_for_resume=1.0)
    assert [g.floor_slots for g in plan.groups] == [10, 10]
    assert plan.groups[0].num_slots == 10  # 1 % alone would give ~1 slot
    assert plan.groups[1].num_slots == (256 * 100 - 10 * 256) // 128


def test_constraint_floor_keeps_resume_headroom(make_layout) -> None:
    layout = make_layout(GEMMA_WINDOWS, tokens_per_block=32)
    assert floor_slots(layout, ((KvCacheDesc(8192, 0),),), max_util_for_resume=0.95) == (270, 270)


@pytest.mark.parametrize(
    ("quota_bytes", "grain_bytes"),
    [
        pytest.param(GIB, 2 * MIB, id="1GiB"),
        pytest.param(2 * GIB - 1, 2 * MIB, id="just-below-2GiB"),
        pytest.param(2 * GIB, 4 * MIB, id="2GiB"),
        pytest.param(5 * GIB, 8 * MIB, id="5GiB"),
        pytest.param(16 * GIB, 32 * MIB, id="16GiB"),
        pytest.param(200 * GIB, 32 * MIB, id="200GiB-capped"),
    ],
)
def test_gpu_grain(quota_bytes: int, grain_bytes: int) -> None:
    assert gpu_grain_bytes(quota_bytes) == grain_bytes


def test_quota_from_max_tokens_counts_full_chunk_and_windows(make_layout) -> None:
    layout = make_layout([8, None], tokens_per_block=4)  # 32 bytes per token per layer; one merged group
    limits = RuntimeLimits(max_seq_len=64, max_batch_size=3, max_num_tokens=16)
    # the merged group's bytes per token counts both layers once per life cycle
    per_lc = layout.slot_bytes(0) // 4
    assert quota_from_max_tokens(layout, limits, 100) == 100 * per_lc + 16 * per_lc + 3 * 8 * per_lc


@pytest.mark.parametrize(
    ("config", "free_gpu_bytes", "quota"),
    [
        pytest.param(KvCacheConfig(max_gpu_total_bytes=500), None, 500, id="plan-uses-the-cap"),
        pytest.param(KvCacheConfig(free_gpu_memory_fraction=0.5), 1000, 500, id="device-fraction"),
        pytest.param(KvCacheConfig(free_gpu_memory_fraction=0.5, max_gpu_total_bytes=300), 1000, 300, id="capped"),
    ],
)
def test_resolve_quota(make_layout, config: KvCacheConfig, free_gpu_bytes: int | None, quota: int) -> None:
    limits = RuntimeLimits(max_seq_len=64, max_batch_size=2)
    assert resolve_quota_bytes(config, make_layout([None]), limits, free_gpu_bytes=free_gpu_bytes) == quota


def test_resolve_quota_without_budget_is_an_error(make_layout) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_quota_bytes(KvCacheConfig(), make_layout([None]), RuntimeLimits(64, 2), free_gpu_bytes=None)
    assert str(info.value) == (
        "planning without a device needs a budget, found max_gpu_total_bytes 0. "
        "Hint: pass --budget-gib or set max_gpu_total_bytes"
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    windows=st.sampled_from([[8, 8, None], [16, None], [None], [4, 4, 4, None, 12]]),
    quota=st.integers(0, 40_000),
    grain=st.sampled_from([1, 64, 1000]),
    ratio=st.none() | st.floats(0.05, 0.95),
    avg=st.none() | st.integers(1, 200),
)
def test_split_never_exceeds_the_budget_and_respects_floors(make_layout, windows, quota, grain, ratio, avg) -> None:
    layout = make_layout(windows, tokens_per_block=4)
    limits = RuntimeLimits(max_seq_len=256, max_batch_size=4, max_num_tokens=32)
    pool_ratio = None
    if ratio is not None and len(layout.life_cycles) > 1:
        rest = (1 - ratio) / (len(layout.life_cycles) - 1)
        pool_ratio = (ratio,) + (rest,) * (len(layout.life_cycles) - 1)
    inputs = GenericManager().sizing_inputs(
        limits, KvCacheConfig(avg_seq_len=avg, pool_ratio=pool_ratio), max_cuda_graph_batch_size=4
    )
    try:
        plan = split_budget(layout, inputs, quota_bytes=quota, grain_bytes=grain, max_util_for_resume=0.95)
    except SizingError:
        return
    assert plan.total_bytes <= quota
    assert all(g.num_slots >= g.floor_slots for g in plan.groups)
