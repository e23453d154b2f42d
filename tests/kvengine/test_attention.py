"""Paged attention over the pools equals dense attention, on CPU (CUDA variants carry the gpu marker)."""

from __future__ import annotations

import itertools

import pytest
import torch

from kvengine.attention import (
    _triton_kernel,
    attention_path_from_env,
    dense_attention,
    gather_indices,
    paged_decode_attention,
    write_token_kv,
)
from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.errors import ConfigError
from kvengine.lifecycle import build_layout
from kvengine.memory import KvPools
from kvengine.spec import LayerSpec, ModelSpec
from kvengine.storage import KvStorage
from tests.kvengine.reference import reference_decode

DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)]


def test_each_layer_reads_its_own_contiguous_span_of_a_pool() -> None:
    """Buffer-major pools: a layer's key and value views are contiguous and disjoint from every other layer's,
    so one layer's blocks never lie a whole slot row (every layer's block) apart."""
    layers = [LayerSpec(2, 8, "bfloat16", None), LayerSpec(2, 8, "bfloat16", None),
              LayerSpec(1, 16, "bfloat16", None, key_only=True)]  # fmt: skip
    layout = build_layout(layers, [None] * 3, tokens_per_block=4)
    pools = KvPools(layout, [10] * len(layout.groups), device=torch.device("cpu"))
    views = {view.data_ptr(): view for i in range(len(layers)) for view in pools.layer_kv(i)}
    assert len(views) == 5, "two layers' key and value, one key-only latent"
    spans = sorted((ptr, ptr + view.numel() * view.element_size()) for ptr, view in views.items())
    assert [view.is_contiguous() and view.shape[0] == 10 for view in views.values()] == [True] * 5
    assert all(end <= following for (_, end), (following, _) in itertools.pairwise(spans))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "layer",
    [
        pytest.param(LayerSpec(2, 8, "float32", None, num_q_heads=4), id="full-gqa"),
        pytest.param(LayerSpec(2, 8, "float32", 6), id="window-6"),
        pytest.param(LayerSpec(1, 8, "float32", 6, sink_tokens=4, num_q_heads=2), id="window-6-sink-4"),
        pytest.param(LayerSpec(1, 16, "float32", 9, key_only=True, num_q_heads=4), id="window-9-key-only"),
        pytest.param(LayerSpec(2, 8, "bfloat16", 5), id="window-5-bf16"),
    ],
)
def test_paged_attention_matches_dense(device: str, layer: LayerSpec) -> None:
    torch.manual_seed(0)
    tpb, lengths = 4, [1, 3, 4, 5, 9, 17, 23]
    layout = build_layout([layer], [layer.window_tokens], tokens_per_block=tpb)
    storage = KvStorage(layout, [64])
    pools = KvPools(layout, [64], device=torch.device(device))
    k_pool, v_pool = pools.layer_kv(0)
    table = torch.full((len(lengths), 8), -1, dtype=torch.int64)
    dense_k, dense_v = [], []
    resized = []
    for row, length in enumerate(lengths):
        cache = storage.new_cache()
        resized.append(cache.resize(length, length - 1))  # the last token is the one being decoded
        table[row, : len(cache.tables[0])] = torch.tensor(cache.tables[0])
        k = torch.randn(length, layer.num_kv_heads, layer.head_dim)
        v = k if layer.key_only else torch.randn(length, layer.num_kv_heads, layer.head_dim)
        dense_k.append(k.to(TORCH[layer.dtype]).float())
        dense_v.append(v.to(TORCH[layer.dtype]).float())
        live = [p for p in range(length) if cache.tables[0][p // tpb] >= 0]
        positions = torch.tensor(live, dtype=torch.int64)
        rows = table[row : row + 1].expand(len(live), -1).to(device)
        write_token_kv(k_pool, rows, positions.to(device), k[live].to(device))
        if not layer.key_only:
            write_token_kv(v_pool, rows, positions.to(device), v[live].to(device))
    assert resized == [True] * len(lengths)
    table, seq_lens = table.to(device), torch.tensor(lengths, device=device)
    q = torch.randn(len(lengths), layer.q_heads, layer.head_dim, device=device)
    blocks = gather_indices(table, seq_lens, layout.life_cycles[0], tpb)
    got = paged_decode_attention(
        q.to(TORCH[layer.dtype]),
        k_pool,
        v_pool,
        blocks,
        seq_lens,
        window_tokens=layer.window_tokens,
        sink_tokens=layer.sink_tokens,
    )
    want = torch.stack(
        [
            dense_attention(
                q[row].cpu(),
                dense_k[row],
                dense_v[row],
                window_tokens=layer.window_tokens,
                sink_tokens=layer.sink_tokens,
            )
            for row in range(len(lengths))
        ]
    )
    tolerance = 2e-2 if layer.dtype == "bfloat16" else 1e-5
    torch.testing.assert_close(got.float().cpu(), want, atol=tolerance, rtol=tolerance)


TORCH = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("use_graphs", "batch"),
    [
        pytest.param(False, 3, id="eager-3"),
        pytest.param(True, 3, id="graph-path-padded-3-to-4"),
        pytest.param(True, 4, id="graph-path-4"),
    ],
)
def test_engine_decode_matches_dense_reference(
    tiny_hybrid_spec: ModelSpec, device: str, use_graphs: bool, batch: int
) -> None:
    # 16 window slots for 4 x 9 window blocks: the sliding layers must release and reuse blocks to get through.
    window_slot_bytes, full_slot_bytes = 3 * 2 * 2 * 8 * 4 * 4, 2 * 2 * 8 * 4 * 4
    config = KvCacheConfig(tokens_per_block=4, grain_bytes=1, pool_ratio=(6 / 11, 5 / 11))
    options = EngineOptions(
        device=device,
        budget_bytes=16 * window_slot_bytes + 40 * full_slot_bytes,
        max_context_tokens=48,
        use_cuda_graphs=use_graphs,
        hidden_size=32,
        vocab_size=64,
    )
    engine = DecodeEngine(tiny_hybrid_spec, config, options)
    assert engine.sizing.pools.num_slots == (16, 40)
    generator = torch.Generator().manual_seed(1)
    steps = 36
    tokens = torch.randint(0, 64, (batch, steps), generator=generator).tolist()
    sequences = [engine.add_sequence() for _ in range(batch)]
    assert all(s is not None for s in sequences)
    want = reference_decode(engine, tokens)
    logits: list[torch.Tensor | None] = []
    for step in range(steps):
        out = engine.step(sequences, torch.tensor([t[step] for t in tokens], device=device))  # type: ignore[arg-type]
        engine.storage.check_invariants()  # raises, naming the broken invariant, after the step that broke it
        logits.append(None if out is None else out[1].float().cpu())
    assert [step for step, hidden in enumerate(logits) if hidden is None] == []  # steps the pools could not hold
    got = torch.stack([hidden for hidden in logits if hidden is not None])
    torch.testing.assert_close(got, torch.stack(want), atol=1e-4, rtol=1e-4)
    metrics = engine.metrics()
    assert (metrics.graph_steps, metrics.eager_steps) == ((steps, 0) if use_graphs else (0, steps))
    assert metrics.padded_steps == (steps if use_graphs and batch == 3 else 0)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        pytest.param(None, "triton-folded", id="unset"),
        pytest.param("", "triton-folded", id="empty"),
        pytest.param("triton", "triton", id="triton"),
        pytest.param("triton-unfused", "triton-unfused", id="triton-unfused"),
        pytest.param("torch", "torch", id="torch"),
    ],
)
def test_the_attention_variable_names_a_path(text: str | None, path: str) -> None:
    assert attention_path_from_env({} if text is None else {"KVENGINE_ATTENTION": text}) == path


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        pytest.param("toch", "did you mean 'torch'? valid: torch, triton, triton-folded, triton-unfused", id="typo"),
        pytest.param("Torch", "did you mean 'torch'? valid: torch, triton, triton-folded, triton-unfused",
                     id="capitalized"),
        pytest.param("triton_unfused", "did you mean 'triton-unfused' or 'triton-folded'? valid: torch, triton, "
                     "triton-folded, triton-unfused", id="underscore"),
        pytest.param("flash", "valid: torch, triton, triton-folded, triton-unfused", id="unknown"),
    ],
)
def test_an_attention_value_naming_no_path_is_an_error_not_the_fast_path(text: str, hint: str) -> None:
    with pytest.raises(ConfigError) as info:
        attention_path_from_env({"KVENGINE_ATTENTION": text})
    expected = (f"KVENGINE_ATTENTION must be one of triton-folded, triton, triton-unfused, torch (or unset), "
                f"found {text!r}. "
                f"Hint: {hint}")  # fmt: skip
    assert str(info.value) == expected


def test_the_kernel_choice_reads_the_checked_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KVENGINE_ATTENTION", "toch")
    _triton_kernel.cache_clear()
    try:
        with pytest.raises(ConfigError, match=r"^KVENGINE_ATTENTION must be one of"):
            _triton_kernel()
        monkeypatch.setenv("KVENGINE_ATTENTION", "torch")
        assert _triton_kernel() is None
    finally:
        _triton_kernel.cache_clear()  # the next test reads its own environment
