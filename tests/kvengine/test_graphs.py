"""CUDA-graph capture and replay on a real GPU (gpu marker); the padded static path also runs on CPU."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.loader import load_preset
from kvengine.padding import EAGER_NO_GRAPH
from kvengine.quota import GIB
from kvengine.spec import ModelSpec

DecodeSteps = Callable[..., list[torch.Tensor]]  # the `decode_steps` fixture (tests/kvengine/conftest.py)


@pytest.mark.gpu
@pytest.mark.parametrize("batch", [pytest.param(5, id="padded-5-to-8"), pytest.param(8, id="exact-8")])
def test_cuda_graph_replay_matches_eager(tiny_hybrid_spec: ModelSpec, batch: int, decode_steps: DecodeSteps) -> None:
    def engine(graphs: bool) -> DecodeEngine:
        options = EngineOptions(
            device="cuda",
            budget_bytes=1 << 22,
            max_context_tokens=64,
            use_cuda_graphs=graphs,
            hidden_size=32,
            vocab_size=64,
        )
        return DecodeEngine(tiny_hybrid_spec, KvCacheConfig(tokens_per_block=4, grain_bytes=1), options)

    graphed, eager = engine(True), engine(False)
    assert graphed.runner.use_cuda_graphs and graphed.runner.captured_sizes == (1, 2, 4, 8)
    for got, want in zip(decode_steps(graphed, batch, 30), decode_steps(eager, batch, 30), strict=True):
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    assert graphed.metrics().graph_steps == 30 and graphed.metrics().eager_steps == 0
    assert eager.metrics().eager_steps == 30


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("avg_seq_len", "captured", "eager_steps"),
    [
        pytest.param(None, (1, 2, 4, 8, 16, 32, 64, 128, 256), 0, id="default-sizing-captures-all"),
        pytest.param(32768, (1, 2, 4, 8, 16, 32, 64), 4, id="old-behaviour-batch-80-runs-eager"),
    ],
)
def test_gemma_like_capture_on_gpu(
    avg_seq_len: int | None, captured: tuple[int, ...], eager_steps: int, decode_steps: DecodeSteps
) -> None:
    spec = load_preset("gemma-like")
    options = EngineOptions(device="cuda", budget_bytes=4 * GIB, max_context_tokens=128, hidden_size=256)
    engine = DecodeEngine(spec, KvCacheConfig(avg_seq_len=avg_seq_len), options)
    assert engine.metrics().captured_sizes == captured
    decode_steps(engine, 80, 4)  # 80 one-block sequences: as many as the old sliding pool (89 slots) holds
    metrics = engine.metrics()
    assert metrics.eager_steps == eager_steps
    assert metrics.eager_reasons == ({EAGER_NO_GRAPH: eager_steps} if eager_steps else {})
    assert metrics.capture_coverage == len(captured) / 9
