from __future__ import annotations

import pytest

from kvengine.config import KvCacheConfig
from kvengine.errors import ConfigError
from kvengine.manager import MANAGERS
from kvengine.slots import KvCacheDesc as D
from kvengine.slots import SizingInputs
from kvengine.spec import RuntimeLimits

LIMITS = RuntimeLimits(max_seq_len=1024, max_batch_size=3, max_num_tokens=2048, max_draft_len=2)
DSV4 = RuntimeLimits(max_seq_len=1024, max_batch_size=4, max_num_tokens=256)
DSV4_DRAFT = RuntimeLimits(
    max_seq_len=1024, max_batch_size=4, max_num_tokens=256, max_draft_len=3, num_extra_kv_tokens=2
)


@pytest.mark.parametrize(
    ("manager", "limits", "config", "graph_bs", "expected"),
    [
        pytest.param("generic", LIMITS, KvCacheConfig(), 8, SizingInputs(), id="generic-default-fallback"),
        pytest.param(
            "generic",
            LIMITS,
            KvCacheConfig(avg_seq_len=1024),
            8,
            SizingInputs(typical_step=(D(2048, 0), D(1024, 1021), D(1024, 1021)), constraints=((D(2048, 0),),)),
            id="generic-avg-builds-typical-and-context-only",
        ),
        pytest.param(
            "generic",
            LIMITS,
            KvCacheConfig(avg_seq_len=256),
            8,
            SizingInputs(typical_step=(D(2048, 0), D(256, 253), D(256, 253)), constraints=((D(2048, 0),),)),
            id="generic-avg-256",
        ),
        pytest.param(
            "generic",
            RuntimeLimits(max_seq_len=1024, max_batch_size=1, max_num_tokens=256, num_extra_kv_tokens=2),
            KvCacheConfig(avg_seq_len=512),
            8,
            SizingInputs(typical_step=(D(258, 0),), constraints=((D(258, 0),),)),
            id="generic-extra-tokens-in-context-capacity",
        ),
        pytest.param(
            "generic",
            LIMITS,
            KvCacheConfig(avg_seq_len=256, pool_ratio=(1.0,)),
            8,
            SizingInputs(pool_ratio=(1.0,)),
            id="generic-pool-ratio-overrides",
        ),
        pytest.param(
            "generic",
            RuntimeLimits(max_seq_len=1024, max_batch_size=2),
            KvCacheConfig(avg_seq_len=100),
            8,
            SizingInputs(typical_step=(D(100, 0), D(100, 99))),
            id="generic-no-token-budget-no-context-constraint",
        ),
        pytest.param(
            "deepseek-v4",
            DSV4,
            KvCacheConfig(),
            8,
            SizingInputs(
                typical_step=(D(256, 0),) + (D(1024, 1023),) * 3,
                constraints=((D(1024, 1023),) + (D(1, 0),) * 3, (D(256, 0),)),
            ),
            id="dsv4-default-max-seq-len-and-warmup",
        ),
        pytest.param(
            "deepseek-v4",
            DSV4_DRAFT,
            KvCacheConfig(avg_seq_len=256),
            2,
            SizingInputs(
                typical_step=(D(258, 0),) + (D(256, 252),) * 3,
                constraints=((D(1024, 1023), D(6, 0)), (D(258, 0),)),
            ),
            id="dsv4-draft-extra-and-graph-batch-clamp",
        ),
        pytest.param(
            "deepseek-v4",
            DSV4,
            KvCacheConfig(),
            0,
            SizingInputs(typical_step=(D(256, 0),) + (D(1024, 1023),) * 3, constraints=((D(256, 0),),)),
            id="dsv4-graphs-disabled-no-warmup-constraint",
        ),
        pytest.param(
            "deepseek-v4",
            DSV4_DRAFT,
            KvCacheConfig(pool_ratio=(0.5, 0.5)),
            8,
            SizingInputs(pool_ratio=(0.5, 0.5)),
            id="dsv4-pool-ratio-omits-everything",
        ),
    ],
)
def test_sizing_inputs(
    manager: str, limits: RuntimeLimits, config: KvCacheConfig, graph_bs: int, expected: SizingInputs
) -> None:
    assert MANAGERS[manager].sizing_inputs(limits, config, max_cuda_graph_batch_size=graph_bs) == expected


@pytest.mark.parametrize("manager", ["generic", "deepseek-v4"])
def test_avg_seq_len_above_max_seq_len_is_rejected(manager: str) -> None:
    with pytest.raises(ConfigError) as info:
        MANAGERS[manager].sizing_inputs(LIMITS, KvCacheConfig(avg_seq_len=2048), max_cuda_graph_batch_size=8)
    assert str(info.value) == (
        "avg_seq_len must be <= max_seq_len 1024, found 2048. "
        "Hint: lower --avg-seq-len or leave it unset for the allocator fallback"
    )


@pytest.mark.parametrize(
    ("manager", "avg_seq_len", "typical"),
    [
        pytest.param("generic", None, None, id="generic-unset"),
        pytest.param("deepseek-v4", None, 1024, id="dsv4-falls-back-to-max-seq-len"),
        pytest.param("deepseek-v4", 256, 256, id="dsv4-avg"),
    ],
)
def test_typical_seq_len(manager: str, avg_seq_len: int | None, typical: int | None) -> None:
    assert MANAGERS[manager].typical_seq_len(LIMITS, KvCacheConfig(avg_seq_len=avg_seq_len)) == typical
