"""Tiny specs and layouts for engine tests (helpers are fixtures returning factories)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch

from kvengine.engine import DecodeEngine
from kvengine.lifecycle import CacheLayout, build_layout
from kvengine.spec import LayerSpec, ModelSpec, RuntimeLimits

LayoutFactory = Callable[..., CacheLayout]


def layers_for(
    windows: Sequence[int | None],
    *,
    num_kv_heads: int = 1,
    head_dim: int = 4,
    dtype: str = "float32",
    sink_tokens: int = 0,
) -> tuple[LayerSpec, ...]:
    return tuple(LayerSpec(num_kv_heads, head_dim, dtype, w, sink_tokens=sink_tokens) for w in windows)


@pytest.fixture
def make_layout() -> LayoutFactory:
    """`make_layout([1024] * 50 + [None] * 10, tokens_per_block=32)`: equal bytes per layer."""

    def factory(windows: Sequence[int | None], *, tokens_per_block: int = 4, sink_tokens: int = 0) -> CacheLayout:
        return build_layout(layers_for(windows, sink_tokens=sink_tokens), windows, tokens_per_block=tokens_per_block)

    return factory


@pytest.fixture
def tiny_hybrid_spec() -> ModelSpec:
    """Three sliding layers (window 8) and one full layer, 2 KV heads of 8, float32, 4 tokens per block."""
    layers = layers_for([8, 8, 8, None], num_kv_heads=2, head_dim=8)
    layers = tuple(
        LayerSpec(layer.num_kv_heads, layer.head_dim, layer.dtype, layer.window_tokens, num_q_heads=4)
        for layer in layers
    )
    return ModelSpec(
        "tiny-hybrid",
        "generic",
        layers,
        RuntimeLimits(max_seq_len=64, max_batch_size=8, max_num_tokens=32),
        tokens_per_block=4,
    )


DecodeSteps = Callable[..., list[torch.Tensor]]


@pytest.fixture
def decode_steps() -> DecodeSteps:
    """`decode_steps(engine, batch, steps)`: hidden states of `steps` decode steps of `batch` fresh sequences;
    token ids are fixed per step (no argmax feedback, so two engines can be compared step by step)."""

    def run(engine: DecodeEngine, batch: int, steps: int) -> list[torch.Tensor]:
        sequences = [engine.add_sequence() for _ in range(batch)]
        assert all(s is not None for s in sequences)
        hidden = []
        for step in range(steps):
            tokens = (torch.arange(batch, device=engine.device) * 7 + step) % 64
            out = engine.step(sequences, tokens)  # type: ignore[arg-type]
            assert out is not None
            hidden.append(out[1].float().cpu())
        return hidden

    return run
