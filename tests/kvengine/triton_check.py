"""Run by test_triton_attention.py in a process with TRITON_INTERPRET=1 (it must be set before Triton compiles
anything): the Triton kernels and the fused decode step on CPU tensors, against the dense reference. Prints
one line per check, `<name>: <what was found> ok` (or MISMATCH), and exits 1 when any mismatched; names given
as arguments run only those checks.

    kernel-*   the paged kernel over filled pools (splits by whole blocks and mid-block, the combine kernel and
               the torch merge), each of the engine's layer kinds, the presets' own head sizes among them
    fused-*    the new token's K/V passed in: stored into the pool (where write_token_kv would) and attended
    norm-*     the RMS norm kernel against kvengine.model.rms_norm
    engine-*   whole decode steps of the fused engine against the dense reference, the per-op step's pools,
               and the planted extra cost
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch

from kvengine.attention import _triton_kernel, dense_attention, gather_indices, new_token_blocks, write_token_kv
from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.lifecycle import CacheLayout, build_layout
from kvengine.memory import TORCH_DTYPES, KvPools
from kvengine.model import rms_norm
from kvengine.spec import LayerSpec, ModelSpec, RuntimeLimits
from kvengine.storage import KvStorage
from kvengine.triton_attention import NewToken, PagedLaunch, triton_paged_decode
from kvengine.triton_norm import triton_rms_norm
from tests.kvengine.reference import reference_decode

LAYERS = {
    "full-gqa": LayerSpec(2, 8, "float32", None, num_q_heads=4),
    "window-6": LayerSpec(2, 8, "float32", 6),
    "window-6-sink-4": LayerSpec(1, 8, "float32", 6, sink_tokens=4, num_q_heads=2),
    "window-9-key-only": LayerSpec(1, 16, "float32", 9, key_only=True, num_q_heads=4),
    "full-fp16-gqa-d32": LayerSpec(2, 32, "float16", None, num_q_heads=8),
}
LENGTHS = {4: [1, 3, 4, 5, 9, 17, 23], 32: [1, 17, 32, 33, 50, 70], 128: [1, 100, 129, 260]}
TOLERANCE = {"float32": 1e-5, "float16": 2e-3}
TILES_OF_16 = PagedLaunch(block_t=16, num_warps=4, num_stages=3, programs_per_sm=2)  # 2 tiles a 32-token block
V_WITH_K = PagedLaunch(block_t=16, num_warps=4, num_stages=3, programs_per_sm=2, v_with_k=True)
PREFETCH = PagedLaunch(block_t=16, num_warps=4, num_stages=3, programs_per_sm=2, prefetch=True)
LAST_MERGES = PagedLaunch(block_t=16, num_warps=4, num_stages=3, programs_per_sm=2, last_split_merges=True)
HEAD_PARTS_2 = PagedLaunch(block_t=16, num_warps=4, num_stages=3, programs_per_sm=2, head_parts=2)
HEAD_PARTS_4 = dataclasses.replace(HEAD_PARTS_2, block_t=32, head_parts=4)  # DeepSeek's d512 tiles
HEAD_PARTS_MERGE = dataclasses.replace(HEAD_PARTS_2, last_split_merges=True)
NARROW = PagedLaunch(block_t=16, num_warps=4, num_stages=3, programs_per_sm=2, narrow_partials=True)
NARROW_MERGE = dataclasses.replace(NARROW, last_split_merges=True)
IN_REGISTERS = PagedLaunch(block_t=16, num_warps=4, num_stages=3, programs_per_sm=2, token_in_registers=True)
IN_REGISTERS_MERGE = dataclasses.replace(IN_REGISTERS, last_split_merges=True, narrow_partials=True)
Check = Callable[[], tuple[str, bool]]


@dataclass(frozen=True)
class Filled:
    """One layer's pools with each row's tokens stored, and what they hold densely."""

    layout: CacheLayout
    k_pool: torch.Tensor
    v_pool: torch.Tensor
    table: torch.Tensor  # [B, blocks]
    dense: list[tuple[torch.Tensor, torch.Tensor]]  # per row: every token's (k, v) in float32
    qkv: torch.Tensor  # [B, (q_heads + 2 x kv_heads) x d]: a projection's output; its k and v are the last token's

    @property
    def seq_lens(self) -> torch.Tensor:
        return torch.tensor([k.shape[0] for k, _ in self.dense], device=self.table.device)


def filled(
    layer: LayerSpec, tpb: int, *, leave_last: bool = False, lengths: list[int] | None = None, device: str = "cpu"
) -> Filled:
    """Pools holding each row's tokens of `lengths` (LENGTHS[tpb]; the last one left out when `leave_last`)."""
    torch.manual_seed(0)
    lengths, dtype = lengths or LENGTHS[tpb], TORCH_DTYPES[layer.dtype]
    layout = build_layout([layer], [layer.window_tokens], tokens_per_block=tpb)
    slots = sum(-(-length // tpb) for length in lengths) + 1
    storage, pools = KvStorage(layout, [slots]), KvPools(layout, [slots], device=torch.device(device))
    k_pool, v_pool = pools.layer_kv(0)
    table = torch.full((len(lengths), -(-max(lengths) // tpb) + 1), -1, dtype=torch.int64)
    dense, rows = [], []
    for row, length in enumerate(lengths):
        cache = storage.new_cache()
        assert cache.resize(length, length - 1)  # the last token is the one being decoded
        table[row, : len(cache.tables[0])] = torch.tensor(cache.tables[0])
        k = torch.randn(length, layer.num_kv_heads, layer.head_dim).to(dtype)
        v = k if layer.key_only else torch.randn(length, layer.num_kv_heads, layer.head_dim).to(dtype)
        dense.append((k.float(), v.float()))
        q = torch.randn(layer.q_heads * layer.head_dim).to(dtype)
        rows.append(torch.cat([q, k[-1].flatten(), v[-1].flatten()]))
        stored = [p for p in range(length - leave_last) if cache.tables[0][p // tpb] >= 0]
        into = table[row : row + 1].expand(len(stored), -1).to(device)
        positions = torch.tensor(stored, dtype=torch.int64, device=device)
        write_token_kv(k_pool, into, positions, k[stored].to(device))
        if not layer.key_only:
            write_token_kv(v_pool, into, positions, v[stored].to(device))
    return Filled(layout, k_pool, v_pool, table.to(device), dense, torch.stack(rows).to(device))


def split_qkv(f: Filled, layer: LayerSpec) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Strided views into the projection output, as the fused step passes them."""
    q_width, kv_width = layer.q_heads * layer.head_dim, layer.num_kv_heads * layer.head_dim
    heads = (-1, layer.num_kv_heads, layer.head_dim)
    q = f.qkv[:, :q_width].view(-1, layer.q_heads, layer.head_dim)
    v = None if layer.key_only else f.qkv[:, q_width + kv_width :].view(heads)
    return q, f.qkv[:, q_width : q_width + kv_width].view(heads), v


def kernel_call(f: Filled, layer: LayerSpec, *, new: bool = False) -> Callable[..., torch.Tensor]:
    """The kernel over `f`'s pools as a call taking its options; `new`: the last token passed in, as the fused
    step passes it. Its indices are made here, so the call itself can be captured in a CUDA graph (no host to
    device copy in it)."""
    tpb, seq_lens = f.layout.tokens_per_block, f.seq_lens
    slots, logical, usable = gather_indices(f.table, seq_lens, f.layout.life_cycles[0], tpb)
    blocks = (torch.where(usable, slots, -1), logical, usable)
    q, k, v = split_qkv(f, layer)
    token = NewToken(k, v, *new_token_blocks(blocks, seq_lens - 1, tpb)) if new else None
    return functools.partial(
        triton_paged_decode, q, f.k_pool, f.v_pool, blocks[0], logical, seq_lens, window_tokens=layer.window_tokens,
        sink_tokens=layer.sink_tokens, new_token=token,
    )  # fmt: skip


def attend(f: Filled, layer: LayerSpec, *, new: bool = False, **options: object) -> torch.Tensor:
    """The kernel over `f`'s pools; `new`: the last token passed in, as the fused step passes it."""
    return kernel_call(f, layer, new=new)(**options)


def worst_against_dense(f: Filled, layer: LayerSpec, got: torch.Tensor) -> float:
    q = split_qkv(f, layer)[0]
    worst = 0.0
    for row, (k, v) in enumerate(f.dense):
        want = dense_attention(q[row].float().cpu(), k, v, window_tokens=layer.window_tokens,
                               sink_tokens=layer.sink_tokens)  # fmt: skip
        worst = max(worst, (got[row].float().cpu() - want).abs().max().item())
    return worst


def within(error: float, tolerance: float) -> tuple[str, bool]:
    return f"max abs error {error:.2e} (tolerance {tolerance:g})", error <= tolerance


def kernel_check(layer: LayerSpec, tpb: int = 4, **options: object) -> Check:
    def run() -> tuple[str, bool]:
        f = filled(layer, tpb)
        return within(worst_against_dense(f, layer, attend(f, layer, **options)), TOLERANCE[layer.dtype])

    return run


def fused_attend_check(layer: LayerSpec, tpb: int = 4, **options: object) -> Check:
    """The new token passed in, not yet in the pool: attended all the same."""

    def run() -> tuple[str, bool]:
        f = filled(layer, tpb, leave_last=True)
        got = attend(f, layer, new=True, **options)
        return within(worst_against_dense(f, layer, got), TOLERANCE[layer.dtype])

    return run


def fused_store_check(layer: LayerSpec, tpb: int = 4, **options: object) -> Check:
    """The pools after the call equal the pools with the token written by write_token_kv."""

    def run() -> tuple[str, bool]:
        f = filled(layer, tpb, leave_last=True)
        pools, want = pools_and_their_want(f, layer)
        attend(f, layer, new=True, **options)
        errors = [(got.float() - w.float()).abs().max().item() for got, w in zip(pools, want, strict=True)]
        return within(max(errors), 0.0)

    return run


def pools_and_their_want(f: Filled, layer: LayerSpec) -> tuple[tuple[torch.Tensor, ...], list[torch.Tensor]]:
    """The layer's pools (one tensor when key-only), and copies with the last token written by write_token_kv."""
    pools = (f.k_pool,) if layer.key_only else (f.k_pool, f.v_pool)
    want = [pool.clone() for pool in pools]
    _, k, v = split_qkv(f, layer)
    for pool, token in zip(want, (k, v)[: len(pools)], strict=True):
        write_token_kv(pool, f.table, f.seq_lens - 1, token)
    return pools, want


def merged_twice_check(layer: LayerSpec, tpb: int = 4, **options: object) -> Check:
    """Two calls in a row merge right: the last split of each row zeroed its arrival counter for the next."""

    def run() -> tuple[str, bool]:
        f = filled(layer, tpb)
        first, second = attend(f, layer, **options), attend(f, layer, **options)
        return within(max(worst_against_dense(f, layer, got) for got in (first, second)), TOLERANCE[layer.dtype])

    return run


def norm_check(dtype: torch.dtype, hidden: int, tolerance: float) -> Check:
    def run() -> tuple[str, bool]:
        x = (torch.randn(5, hidden, generator=torch.Generator().manual_seed(0)) * 3).to(dtype)
        return within((triton_rms_norm(x).float() - rms_norm(x).float()).abs().max().item(), tolerance)

    return run


HYBRID = ModelSpec(
    "tiny-hybrid", "generic",
    tuple(LayerSpec(2, 8, "float32", w, num_q_heads=4) for w in (5, 5, 5, None)),  # TOKENS' 7 steps slide 5
    RuntimeLimits(max_seq_len=32, max_batch_size=4, max_num_tokens=32), tokens_per_block=4,
)  # fmt: skip
KEY_ONLY = dataclasses.replace(HYBRID, name="tiny-key-only", layers=(
    LayerSpec(1, 16, "float32", 5, sink_tokens=4, key_only=True, num_q_heads=4),
    LayerSpec(1, 16, "float32", None, key_only=True, num_q_heads=4),
))  # fmt: skip


TOKENS = torch.randint(0, 64, (3, 7), generator=torch.Generator().manual_seed(1)).tolist()


@functools.cache
def decoded(spec: ModelSpec, path: str, extra: float = 0.0) -> tuple[DecodeEngine, torch.Tensor]:
    """An engine on CPU whose decoder takes `path` ($KVENGINE_ATTENTION, read when the decoder is built), after
    len(TOKENS[0]) steps of 3 fresh sequences (padded to the 4-row graph path), and their hidden states. Cached:
    in the interpreter one such run takes seconds, and several checks read the same one."""
    os.environ["KVENGINE_ATTENTION"] = path
    _triton_kernel.cache_clear()
    options = EngineOptions(device="cpu", budget_bytes=1 << 20, max_context_tokens=16, hidden_size=32,
                            vocab_size=64, extra_step_cost=extra)  # fmt: skip
    engine = DecodeEngine(spec, KvCacheConfig(tokens_per_block=4, grain_bytes=1), options)
    assert engine.model.fused == (path in ("triton", "triton-folded"))
    sequences = [engine.add_sequence() for _ in TOKENS]
    hidden = []
    for step in range(len(TOKENS[0])):
        out = engine.step(sequences, torch.tensor([t[step] for t in TOKENS]))  # type: ignore[arg-type]
        assert out is not None
        engine.storage.check_invariants()
        hidden.append(out[1].float())
    return engine, torch.stack(hidden)


def pool_tensors(engine: DecodeEngine) -> list[torch.Tensor]:
    return [t for group in engine.pools.tensors for t in group]


def engine_reference_check(spec: ModelSpec, path: str = "triton") -> Check:
    def run() -> tuple[str, bool]:
        engine, got = decoded(spec, path)
        return within((got - torch.stack(reference_decode(engine, TOKENS))).abs().max().item(), 1e-4)

    return run


def engine_pools_check(spec: ModelSpec, path: str = "triton") -> Check:
    """The fused step (`path`) stores what the per-op step's write_token_kv stores."""

    def run() -> tuple[str, bool]:
        fused, per_op = (pool_tensors(decoded(spec, name)[0]) for name in (path, "triton-unfused"))
        pairs = zip(fused, per_op, strict=True)
        return within(max((a - b).abs().max().item() for a, b in pairs), 1e-5)

    return run


def engine_extra_cost_check(spec: ModelSpec) -> Check:
    """The planted extra cost on the fused step: outputs and pools bit for bit as without it."""

    def run() -> tuple[str, bool]:
        (plain, plain_hidden), (slowed, slowed_hidden) = decoded(spec, "triton"), decoded(spec, "triton", 0.5)
        pairs = zip([plain_hidden, *pool_tensors(plain)], [slowed_hidden, *pool_tensors(slowed)], strict=True)
        return within(max((a - b).abs().max().item() for a, b in pairs), 0.0)

    return run


DEEPSEEK_WINDOW = LayerSpec(1, 512, "float32", 128, key_only=True, num_q_heads=16)  # the preset's head sizes
DEEPSEEK_FULL = LayerSpec(1, 128, "float32", None, key_only=True, num_q_heads=16)
GEMMA_WINDOW = LayerSpec(8, 128, "float16", 48, num_q_heads=16)  # tpb 32: a window of 1.5 blocks

CHECKS: dict[str, Check] = {
    **{f"kernel-{name}-splits-{splits}": kernel_check(layer, splits=splits)
       for name, layer in LAYERS.items() for splits in (1, 3)},
    "kernel-full-gqa-torch-merge": kernel_check(LAYERS["full-gqa"], splits=3, torch_combine=True),
    "kernel-full-gqa-last-split-merges-twice": merged_twice_check(LAYERS["full-gqa"], splits=3, launch=LAST_MERGES),
    "kernel-deepseek-window-d512-last-split-merges-splits-5": kernel_check(DEEPSEEK_WINDOW, 128, splits=5,
                                                                          launch=LAST_MERGES),
    "kernel-window-40-sink-4-prefetch-splits-4": kernel_check(
        LayerSpec(2, 8, "float32", 40, sink_tokens=4, num_q_heads=4), 32, splits=4, launch=PREFETCH),
    "fused-attend-window-9-key-only-prefetch-splits-3": fused_attend_check(LAYERS["window-9-key-only"], splits=3,
                                                                          launch=PREFETCH),
    "kernel-window-6-v-with-k-splits-3": kernel_check(LAYERS["window-6"], splits=3, launch=V_WITH_K),
    "fused-attend-window-6-v-with-k-splits-3": fused_attend_check(LAYERS["window-6"], splits=3, launch=V_WITH_K),
    "kernel-full-tiles-of-16-splits-3": kernel_check(LAYERS["full-gqa"], 32, splits=3, launch=TILES_OF_16),
    "kernel-window-40-sink-4-tiles-of-16-splits-4": kernel_check(
        LayerSpec(2, 8, "float32", 40, sink_tokens=4, num_q_heads=4), 32, splits=4, launch=TILES_OF_16),
    "kernel-gemma-window-fp16-splits-1": kernel_check(GEMMA_WINDOW, 32, splits=1),
    "kernel-deepseek-window-d512-splits-5": kernel_check(DEEPSEEK_WINDOW, 128, splits=5),
    "kernel-deepseek-full-d128-splits-5": kernel_check(DEEPSEEK_FULL, 128, splits=5),
    **{f"fused-attend-{name}-splits-{splits}": fused_attend_check(layer, splits=splits)
       for name, layer in LAYERS.items() for splits in (1, 3)},
    "fused-attend-deepseek-window-d512-splits-5": fused_attend_check(DEEPSEEK_WINDOW, 128, splits=5),
    "fused-store-full-gqa-splits-3": fused_store_check(LAYERS["full-gqa"], splits=3),
    "fused-store-window-6-sink-4": fused_store_check(LAYERS["window-6-sink-4"]),
    "fused-store-window-9-key-only-splits-3": fused_store_check(LAYERS["window-9-key-only"], splits=3),
    "fused-store-fp16-tiles-of-16-splits-5": fused_store_check(LAYERS["full-fp16-gqa-d32"], tpb=32, splits=5,
                                                               launch=TILES_OF_16),
    "fused-attend-window-40-sink-4-tiles-of-16-splits-4": fused_attend_check(
        LayerSpec(2, 8, "float32", 40, sink_tokens=4, num_q_heads=4), 32, splits=4, launch=TILES_OF_16),
    # a KV head's query heads over several programs: each part's heads, the new token stored by each part that
    # holds it (the same bytes), the split counters a part
    "kernel-full-gqa-head-parts-2-splits-3": kernel_check(LAYERS["full-gqa"], 32, splits=3, launch=HEAD_PARTS_2),
    "kernel-deepseek-window-d512-head-parts-4-splits-1": kernel_check(DEEPSEEK_WINDOW, 128, splits=1,
                                                                      launch=HEAD_PARTS_4),
    "fused-attend-deepseek-window-d512-head-parts-4-splits-2": fused_attend_check(DEEPSEEK_WINDOW, 128, splits=2,
                                                                                  launch=HEAD_PARTS_4),
    "fused-store-window-9-key-only-head-parts-2-splits-3": fused_store_check(LAYERS["window-9-key-only"], splits=3,
                                                                            launch=HEAD_PARTS_2),
    "fused-store-full-gqa-head-parts-2": fused_store_check(LAYERS["full-gqa"], launch=HEAD_PARTS_2),
    "kernel-window-9-key-only-head-parts-merge-twice": merged_twice_check(LAYERS["window-9-key-only"], splits=3,
                                                                          launch=HEAD_PARTS_MERGE),
    # float16 partials: the combine kernel, the torch merge and the last split's merge read them
    **{f"kernel-full-fp16-gqa-d32-narrow-partials-{merge}": kernel_check(LAYERS["full-fp16-gqa-d32"], 32, splits=3,
                                                                        **options)
       for merge, options in (("combine-kernel", {"launch": NARROW}), ("last-merges", {"launch": NARROW_MERGE}),
                              ("torch-merge", {"launch": NARROW, "torch_combine": True}))},
    # the new token attended from registers and stored after the loop: every layer kind, split or not, merged by
    # the combine kernel or the last split, with head parts
    **{f"fused-attend-{name}-token-in-registers-splits-{splits}": fused_attend_check(layer, splits=splits,
                                                                                   launch=IN_REGISTERS)
       for name, layer in LAYERS.items() for splits in (1, 3)},
    **{f"fused-store-{name}-token-in-registers-splits-3": fused_store_check(layer, splits=3, launch=IN_REGISTERS)
       for name, layer in LAYERS.items()},
    "fused-attend-deepseek-window-d512-token-in-registers-merges-splits-5": fused_attend_check(
        DEEPSEEK_WINDOW, 128, splits=5, launch=dataclasses.replace(IN_REGISTERS_MERGE, block_t=32)),
    "fused-attend-window-40-sink-4-token-in-registers-merges-splits-4": fused_attend_check(
        LayerSpec(2, 8, "float32", 40, sink_tokens=4, num_q_heads=4), 32, splits=4, launch=IN_REGISTERS_MERGE),
    "fused-attend-window-6-sink-4-prefetch-token-in-registers-splits-3": fused_attend_check(
        LAYERS["window-6-sink-4"], splits=3, launch=dataclasses.replace(IN_REGISTERS, prefetch=True)),
    "fused-store-full-gqa-token-in-registers-head-parts-2-splits-3": fused_store_check(
        LAYERS["full-gqa"], splits=3, launch=dataclasses.replace(IN_REGISTERS, head_parts=2)),
    "norm-float32-64": norm_check(torch.float32, 64, 1e-6),
    "norm-float16-100": norm_check(torch.float16, 100, 4e-3),
    "engine-hybrid-matches-dense": engine_reference_check(HYBRID),
    "engine-key-only-sinks-matches-dense": engine_reference_check(KEY_ONLY),
    "engine-hybrid-pools-match-per-op-step": engine_pools_check(HYBRID),
    "engine-key-only-pools-match-per-op-step": engine_pools_check(KEY_ONLY),
    "engine-key-only-folded-matches-dense": engine_reference_check(KEY_ONLY, "triton-folded"),
    "engine-key-only-folded-pools-match-per-op-step": engine_pools_check(KEY_ONLY, "triton-folded"),
    "engine-key-only-extra-cost-changes-nothing": engine_extra_cost_check(KEY_ONLY),  # the smaller engine: 4 s, not 16
}  # fmt: skip


def main(names: list[str]) -> int:
    failed = 0
    for name in names or CHECKS:
        found, ok = CHECKS[name]()
        failed += not ok
        print(f"{name}: {found} {'ok' if ok else 'MISMATCH'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
