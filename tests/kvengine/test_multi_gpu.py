"""Data-parallel replicas on every visible GPU: each engine keeps its pools, weights and CUDA graphs on its
own device, and replicas with the same seed decode identically. Runs on multi-GPU stages."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.spec import ModelSpec

DecodeSteps = Callable[..., list[torch.Tensor]]  # the `decode_steps` fixture (tests/kvengine/conftest.py)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs at least two CUDA devices"),
]


def replica(spec: ModelSpec, device: str) -> DecodeEngine:
    options = EngineOptions(device=device, budget_bytes=1 << 22, max_context_tokens=64, hidden_size=32, vocab_size=64)
    return DecodeEngine(spec, KvCacheConfig(tokens_per_block=4, grain_bytes=1), options)


def test_one_replica_per_gpu_stays_on_its_device_and_agrees(
    tiny_hybrid_spec: ModelSpec, decode_steps: DecodeSteps
) -> None:
    devices = [f"cuda:{index}" for index in range(torch.cuda.device_count())]
    replicas = [replica(tiny_hybrid_spec, device) for device in devices]
    placed = [({t.device for group in e.pools.tensors for t in group}, e.metrics().captured_sizes) for e in replicas]
    assert placed == [({torch.device(device)}, (1, 2, 4, 8)) for device in devices]
    results = torch.stack([torch.stack(decode_steps(engine, 5, 12)) for engine in replicas])  # replica, step, ...
    torch.testing.assert_close(results[1:], results[:1].expand_as(results[1:]), atol=1e-4, rtol=1e-4)
    assert all(engine.metrics().graph_steps == 12 and engine.metrics().eager_steps == 0 for engine in replicas)
