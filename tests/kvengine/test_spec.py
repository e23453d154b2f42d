from __future__ import annotations

import pytest

from kvengine.config import KvCacheConfig
from kvengine.errors import ConfigError
from kvengine.loader import load_preset, preset_names
from kvengine.quota import resolve_quota_bytes
from kvengine.spec import LayerSpec, RuntimeLimits, effective_windows

LAYERS = (LayerSpec(1, 4, "float32", 512),) * 3 + (LayerSpec(1, 4, "float32", None),)


@pytest.mark.parametrize(
    ("pattern", "max_seq_len", "windows"),
    [
        pytest.param(None, 4096, (512, 512, 512, None), id="spec-windows"),
        pytest.param((128, None), 4096, (128, None, 128, None), id="pattern-repeats"),
        pytest.param(None, 512, (None, None, None, None), id="window-covering-max-seq-len-is-full"),
        pytest.param((8192,), 4096, (None, None, None, None), id="pattern-clamped"),
    ],
)
def test_effective_windows(
    pattern: tuple[int | None, ...] | None, max_seq_len: int, windows: tuple[int | None, ...]
) -> None:
    assert effective_windows(LAYERS, max_seq_len=max_seq_len, window_pattern=pattern) == windows


@pytest.mark.parametrize("name", ["llama-like", "gemma-like", "deepseek-v4-like"])
def test_presets_load(name: str) -> None:
    spec = load_preset(name)
    assert spec.name == name and spec.layers
    assert name in preset_names()


def test_gemma_like_preset_is_the_regression_scenario() -> None:
    spec = load_preset("gemma-like")
    windows = [layer.window_tokens for layer in spec.layers]
    assert windows.count(1024) == 50 and windows.count(None) == 10
    assert len({layer.bytes_per_token() for layer in spec.layers}) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param(
            {"tokens_per_block": 24},
            "tokens_per_block must be a power of two, found 24. Hint: use 16, 32, 64 or 128",
            id="tpb-not-power-of-two",
        ),
        pytest.param(
            {"pool_ratio": (0.5, 0.4)},
            "pool_ratio must sum to 1, found sum 0.9 for [0.5, 0.4]. Hint: normalize the weights",
            id="ratio-sum",
        ),
        pytest.param(
            {"pool_ratio": (1.0, 0.0)},
            "pool_ratio weights must all be > 0, found [1.0, 0.0]. "
            "Hint: give one positive weight per life cycle, summing to 1",
            id="ratio-zero",
        ),
        pytest.param(
            {"max_util_for_resume": 0.0},
            "max_util_for_resume must be in (0, 1], found 0.0. Hint: 0.95 is the default headroom",
            id="util-zero",
        ),
    ],
)
def test_config_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        KvCacheConfig(**kwargs)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_max_tokens_caps_the_quota_with_resume_headroom(make_layout) -> None:
    layout = make_layout([None], tokens_per_block=4)  # 32 bytes per token
    limits = RuntimeLimits(max_seq_len=64, max_batch_size=2)
    config = KvCacheConfig(max_gpu_total_bytes=1 << 20, max_tokens=95, max_util_for_resume=0.95)
    assert resolve_quota_bytes(config, layout, limits, free_gpu_bytes=None) == 3200  # ceil(95 * 32 / 0.95)
