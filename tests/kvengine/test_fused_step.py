"""The fused decode step on a real GPU (gpu marker; skipped without CUDA): its kernels at the presets' own
shapes against the dense reference, and whole engines against the per-op step. On CPU the same kernels run
in Triton's interpreter (test_triton_attention.py)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

pytest.importorskip("triton")
from kvengine import l2_prefetch
from kvengine.attention import _triton_kernel  # after the skip: these import Triton
from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.loader import load_preset
from kvengine.model import rms_norm
from kvengine.quota import GIB
from kvengine.spec import LayerSpec, ModelSpec
from kvengine.triton_attention import can_launch_early, default_launch
from kvengine.triton_norm import triton_rms_norm
from tests.kvengine.reference import reference_decode
from tests.kvengine.triton_check import (
    HYBRID,
    KEY_ONLY,
    attend,
    filled,
    kernel_call,
    pools_and_their_want,
    worst_against_dense,
)

pytestmark = pytest.mark.gpu
LENGTHS = [1, 31, 32, 33, 200, 511, 1000, 1025] * 8  # 64 rows: DeepSeek-like rows x one KV head split on an H200
SHAPES = [
    pytest.param(LayerSpec(8, 128, "bfloat16", 1024, num_q_heads=16), 32, id="gemma-window"),
    pytest.param(LayerSpec(8, 128, "bfloat16", None, num_q_heads=16), 32, id="gemma-full"),
    pytest.param(LayerSpec(1, 512, "bfloat16", 128, key_only=True, num_q_heads=16), 128, id="deepseek-window"),
    pytest.param(LayerSpec(1, 128, "bfloat16", None, key_only=True, num_q_heads=16), 128, id="deepseek-full"),
    pytest.param(LayerSpec(2, 64, "bfloat16", 100, sink_tokens=4, num_q_heads=8), 16, id="window-sinks"),
]


IN_REGISTERS = [pytest.param(False, id="stored-first"), pytest.param(True, id="token-in-registers")]


@pytest.mark.parametrize(("layer", "tpb"), SHAPES)
@pytest.mark.parametrize("in_registers", IN_REGISTERS)
def test_the_paged_kernel_attends_the_passed_token_like_the_dense_reference(
    layer: LayerSpec, tpb: int, in_registers: bool
) -> None:
    launch = dataclasses.replace(default_launch(layer.head_dim, tpb), token_in_registers=in_registers)
    f = filled(layer, tpb, leave_last=True, lengths=LENGTHS, device="cuda")
    assert worst_against_dense(f, layer, attend(f, layer, new=True, launch=launch)) <= 2e-2


@pytest.mark.parametrize(("layer", "tpb"), SHAPES)
@pytest.mark.parametrize("in_registers", IN_REGISTERS)
def test_the_paged_kernel_stores_the_passed_token_where_write_token_kv_would(
    layer: LayerSpec, tpb: int, in_registers: bool
) -> None:
    launch = dataclasses.replace(default_launch(layer.head_dim, tpb), token_in_registers=in_registers)
    f = filled(layer, tpb, leave_last=True, lengths=LENGTHS, device="cuda")
    pools, want = pools_and_their_want(f, layer)
    attend(f, layer, new=True, launch=launch)
    assert [torch.equal(got, w) for got, w in zip(pools, want, strict=True)] == [True] * len(pools)


@pytest.mark.parametrize(("layer", "tpb"), SHAPES)
@pytest.mark.parametrize("splits", [pytest.param(1, id="one-split"), pytest.param(7, id="seven-splits")])
def test_the_paged_kernel_over_stored_tokens_matches_the_dense_reference(
    layer: LayerSpec, tpb: int, splits: int
) -> None:
    f = filled(layer, tpb, lengths=LENGTHS, device="cuda")
    assert worst_against_dense(f, layer, attend(f, layer, splits=splits)) <= 2e-2


@pytest.mark.parametrize(("layer", "tpb"), SHAPES)
@pytest.mark.parametrize("merge", [pytest.param(False, id="combine-kernel"), pytest.param(True, id="last-merges")])
@pytest.mark.parametrize("in_registers", IN_REGISTERS)
def test_bf16_partials_merge_like_the_dense_reference(
    layer: LayerSpec, tpb: int, merge: bool, in_registers: bool
) -> None:
    launch = dataclasses.replace(default_launch(layer.head_dim, tpb), narrow_partials=True,
                                 last_split_merges=merge, token_in_registers=in_registers)  # fmt: skip
    f = filled(layer, tpb, leave_last=True, lengths=LENGTHS, device="cuda")
    assert worst_against_dense(f, layer, attend(f, layer, new=True, launch=launch, splits=7)) <= 2e-2


@pytest.mark.parametrize(("layer", "tpb"), SHAPES)
@pytest.mark.parametrize("merge", [pytest.param(False, id="combine-kernel"), pytest.param(True, id="last-merges")])
def test_head_parts_attend_and_store_the_passed_token_as_one_program_a_kv_head_does(
    layer: LayerSpec, tpb: int, merge: bool
) -> None:
    # where parts of one KV head store the same token at once and read it back, a race would show here, not in
    # the interpreter (it runs programs one by one). Parts of 2 query heads (Gemma's whole group of 2: one each)
    group = layer.group
    launch = dataclasses.replace(default_launch(layer.head_dim, tpb), last_split_merges=merge,
                                 head_parts=group // 2 if group > 2 else group)  # fmt: skip
    f = filled(layer, tpb, leave_last=True, lengths=LENGTHS, device="cuda")
    pools, want = pools_and_their_want(f, layer)
    got = [attend(f, layer, new=True, launch=launch, splits=splits) for splits in (1, 3)]
    assert [worst_against_dense(f, layer, out) <= 2e-2 for out in got] == [True, True]
    assert [torch.equal(pool, w) for pool, w in zip(pools, want, strict=True)] == [True] * len(pools)


@pytest.mark.parametrize(("layer", "tpb"), SHAPES)
@pytest.mark.parametrize("merge", [pytest.param(False, id="combine-kernel"), pytest.param(True, id="last-merges")])
def test_a_paged_kernel_launched_early_waits_for_the_gemm_that_makes_its_query(
    layer: LayerSpec, tpb: int, merge: bool
) -> None:
    """PagedLaunch.pdl: in a graph after the GEMM that writes its query and new token, the kernel may start
    while the GEMM drains; it must read what the GEMM wrote (the buffer holds zeros before), to the bit."""
    if not can_launch_early(torch.device("cuda")):
        pytest.skip("no programmatic dependent launch here (sm_90+ and a Triton with launch_pdl)")
    launch = dataclasses.replace(default_launch(layer.head_dim, tpb), last_split_merges=merge)
    f = filled(layer, tpb, leave_last=True, lengths=LENGTHS, device="cuda")
    pools, want_pools = pools_and_their_want(f, layer)
    before = [pool.clone() for pool in pools]  # without the new token
    want = attend(f, layer, new=True, launch=launch, splits=3).clone()
    early = dataclasses.replace(launch, pdl=True)
    # a long GEMM before the kernel: an identity product as wide as the projection, exact in bf16
    source, eye = f.qkv.clone(), torch.eye(f.qkv.shape[1], device="cuda", dtype=f.qkv.dtype)
    # outside the capture: cuBLAS's handle, the kernel's compile, its indices (made from host lists)
    torch.mm(source, eye, out=f.qkv)
    kernel = kernel_call(f, layer, new=True)
    kernel(launch=early, splits=3)  # stores the new token again: the pools are put back before the replay
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch.mm(source, eye, out=f.qkv)
        got = kernel(launch=early, splits=3)
    f.qkv.zero_()
    for pool, old in zip(pools, before, strict=True):
        pool.copy_(old)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(got, want)
    assert [torch.equal(pool, w) for pool, w in zip(pools, want_pools, strict=True)] == [True] * len(pools)


@pytest.mark.parametrize("hidden", [pytest.param(2048, id="2048"), pytest.param(3000, id="3000")])
def test_the_norm_kernel_matches_the_torch_norm(hidden: int) -> None:
    x = torch.randn(128, hidden, device="cuda", generator=torch.Generator("cuda").manual_seed(0)).bfloat16()
    torch.testing.assert_close(triton_rms_norm(x), rms_norm(x), atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("path", ["triton", "triton-folded"])
@pytest.mark.parametrize("spec", [pytest.param(HYBRID, id="hybrid"), pytest.param(KEY_ONLY, id="key-only-sinks")])
def test_the_fused_engine_matches_the_dense_reference_on_cuda(
    spec: ModelSpec, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(spec, path, monkeypatch, budget_bytes=1 << 22, max_context_tokens=32, hidden_size=32)
    tokens = torch.randint(0, 64, (3, 20), generator=torch.Generator().manual_seed(1)).tolist()
    sequences = [engine.add_sequence() for _ in tokens]
    steps = [engine.step(sequences, torch.tensor([t[step] for t in tokens], device="cuda")) for step in range(20)]  # type: ignore[arg-type]
    hidden = [None if out is None else out[1].float().cpu() for out in steps]
    torch.testing.assert_close(hidden, reference_decode(engine, tokens), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("path", ["triton", "triton-folded"])
@pytest.mark.parametrize(
    ("preset", "tpb"),
    [pytest.param("gemma-like", 32, id="gemma-like"), pytest.param("deepseek-v4-like", 128, id="deepseek")],
)
def test_the_fused_step_decodes_the_presets_as_the_per_op_step_does(
    preset: str, tpb: int, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Graphs on, 64 rows of about two blocks; float32 activations over the presets' bf16 pools (the two paths'
    GEMMs may round bf16 activations apart over 60 layers)."""
    spec = load_preset(preset)
    # max_seq_len the test's own: the DeepSeek-like manager sizes its pools for max-length rows, and at the
    # preset's 65536 its 128-token window pool holds only about half of these 64 rows
    runtime = dataclasses.replace(spec.runtime, max_batch_size=64, max_seq_len=4 * tpb)
    spec = dataclasses.replace(spec, runtime=runtime)
    (fused, fused_steps), (per_op, per_op_steps) = (
        _three_graphed_steps(spec, name, tpb, monkeypatch) for name in (path, "triton-unfused")
    )
    assert (fused_steps, per_op_steps) == ((3, 0), (3, 0))  # (graph steps, eager steps): all three graphed
    torch.testing.assert_close(fused, per_op, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize(
    ("preset", "tpb"),
    [pytest.param("gemma-like", 32, id="gemma-like"), pytest.param("deepseek-v4-like", 128, id="deepseek")],
)
def test_graphed_steps_with_weights_prefetched_into_l2_are_the_same_bits(
    preset: str, tpb: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prefetches run on a side stream forked into the step's graph: they must change no value (and the
    capture must join the stream back, or it fails)."""
    spec = load_preset(preset)
    spec = dataclasses.replace(spec, runtime=dataclasses.replace(spec.runtime, max_batch_size=64, max_seq_len=4 * tpb))
    results = []
    for plan in ("off", "both-evict-last", "all"):
        monkeypatch.setenv("KVENGINE_L2_PREFETCH", plan)
        results.append(_three_graphed_steps(spec, "triton", tpb, monkeypatch))
    assert [steps for _, steps in results] == [(3, 0)] * 3
    off = results[0][0]
    torch.testing.assert_close([on for on, _ in results[1:]], [off, off], atol=0, rtol=0)


def _three_graphed_steps(
    spec: ModelSpec, path: str, tpb: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[object], tuple[int, int]]:
    """Each step's hidden states (None for one the pools could not hold) and every pool after three steps of
    64 rows, and the engine's (graph steps, eager steps)."""
    engine = _engine(spec, path, monkeypatch, budget_bytes=4 * GIB, max_context_tokens=4 * tpb, hidden_size=256,
                     compute_dtype="float32")  # fmt: skip
    sequences = [engine.add_sequence(context_tokens=tpb + row % tpb) for row in range(64)]
    assert None not in sequences, "the pools hold every row"
    steps = [engine.step(sequences, (torch.arange(64, device="cuda") * 7 + step) % 512) for step in range(3)]  # type: ignore[arg-type]
    pools = [t.float() for group in engine.pools.tensors for t in group]
    hidden = [None if out is None else out[1].float() for out in steps]
    return [hidden, pools], (engine.metrics().graph_steps, engine.metrics().eager_steps)


def _engine(spec: ModelSpec, path: str, monkeypatch: pytest.MonkeyPatch, **options: object) -> DecodeEngine:
    monkeypatch.setenv("KVENGINE_ATTENTION", path)
    _triton_kernel.cache_clear()
    try:
        engine = DecodeEngine(spec, KvCacheConfig(tokens_per_block=spec.tokens_per_block, grain_bytes=1),
                              EngineOptions(device="cuda", vocab_size=512, **options))  # type: ignore[arg-type]  # fmt: skip
    finally:
        _triton_kernel.cache_clear()  # the next test reads its own environment
    assert engine.model.fused == (path in ("triton", "triton-folded"))
    assert (engine.model.prefetcher is not None) == (engine.model.fused and l2_prefetch.plan_from_env().any)
    return engine
