from __future__ import annotations

import gc
import weakref

import pytest
import torch

from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.errors import ConfigError
from kvengine.spec import ModelSpec

SLOT_BYTES = 3 * 2 * 2 * 8 * 4 * 4 + 2 * 2 * 8 * 4 * 4  # one window slot + one full slot of tiny_hybrid


def _engine(spec: ModelSpec, *, slots: int, graphs: bool = True) -> DecodeEngine:
    config = KvCacheConfig(tokens_per_block=4, grain_bytes=1, pool_ratio=(0.75, 0.25))
    options = EngineOptions(
        budget_bytes=slots * SLOT_BYTES, max_context_tokens=16, use_cuda_graphs=graphs, hidden_size=16, vocab_size=32
    )
    return DecodeEngine(spec, config, options)


def test_engine_reports_warmup_and_keeps_a_padding_dummy(tiny_hybrid_spec: ModelSpec) -> None:
    engine = _engine(tiny_hybrid_spec, slots=20)
    metrics = engine.metrics()
    assert metrics.captured_sizes == (1, 2, 4, 8) and metrics.capture_coverage == 1.0
    assert engine.padding_dummy is not None and engine.storage.open_caches == [engine.padding_dummy]
    engine.storage.check_invariants()


def test_a_dropped_engine_frees_its_pools_without_the_collector(tiny_hybrid_spec: ModelSpec) -> None:
    """No reference cycle holds an engine: its last reference gone, its pools go at once. A perf case builds
    the next engine right after dropping one (a 48 GB pool, then 12 GB on an 80 GB card); a cycle left the
    first one's pools to the collector, and the next engine's build ran out of GPU memory (docs/PERF.md)."""
    engine = _engine(tiny_hybrid_spec, slots=20)
    for seq in [engine.add_sequence(context_tokens=3) for _ in range(2)]:
        engine.step([seq], torch.tensor([1]))
    pools = [weakref.ref(t) for group in engine.pools.tensors for t in group]
    collecting = gc.isenabled()
    gc.disable()
    try:
        del engine
        assert [ref() for ref in pools] == [None] * len(pools)
    finally:
        if collecting:
            gc.enable()


def test_pool_shortage_is_a_value_not_an_error(tiny_hybrid_spec: ModelSpec) -> None:
    engine = _engine(tiny_hybrid_spec, slots=12, graphs=False)  # 12 window + 12 full slots, no padding dummy
    assert engine.add_sequence(context_tokens=100) is None
    sequences = [engine.add_sequence(context_tokens=11) for _ in range(4)]  # 3 full blocks each: 12 of 12
    assert all(s is not None for s in sequences)
    tokens = torch.zeros(4, dtype=torch.int64)
    assert engine.step(sequences, tokens) is not None  # position 11 is still in block 2
    assert engine.step(sequences, tokens) is None  # position 12 needs a 13th full block
    engine.storage.check_invariants()


def test_growing_past_max_context_is_an_error(tiny_hybrid_spec: ModelSpec) -> None:
    engine = _engine(tiny_hybrid_spec, slots=20, graphs=False)
    sequence = engine.add_sequence(context_tokens=16)
    assert sequence is not None
    with pytest.raises(ConfigError) as info:
        engine.step([sequence], torch.zeros(1, dtype=torch.int64))
    assert str(info.value) == (
        "a sequence would grow to 17 tokens, past max_context_tokens 16. "
        "Hint: raise max_context_tokens or finish the sequence"
    )


def test_cpu_engine_needs_a_budget(tiny_hybrid_spec: ModelSpec) -> None:
    with pytest.raises(ConfigError, match="an engine on CPU needs budget_bytes"):
        DecodeEngine(tiny_hybrid_spec, KvCacheConfig(tokens_per_block=4), EngineOptions())
