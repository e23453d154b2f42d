"""Run by test_triton_attention.py in a process with TRITON_INTERPRET=1: the Triton kernel on CPU tensors
against torch's paged path and the dense reference; prints one line per case, exits 1 on a mismatch."""

from __future__ import annotations

import sys

import torch

from kvengine.attention import dense_attention, gather_indices, paged_decode_attention, write_token_kv
from kvengine.lifecycle import build_layout
from kvengine.memory import KvPools
from kvengine.spec import LayerSpec
from kvengine.storage import KvStorage
from kvengine.triton_attention import triton_paged_decode

LAYERS = {
    "full-gqa": LayerSpec(2, 8, "float32", None, num_q_heads=4),
    "window-6": LayerSpec(2, 8, "float32", 6),
    "window-6-sink-4": LayerSpec(1, 8, "float32", 6, sink_tokens=4, num_q_heads=2),
    "window-9-key-only": LayerSpec(1, 16, "float32", 9, key_only=True, num_q_heads=4),
    "full-fp16-gqa-d32": LayerSpec(2, 32, "float16", None, num_q_heads=8),
}


def check(name: str, layer: LayerSpec, splits: int | None) -> float:
    torch.manual_seed(0)
    tpb, lengths = 4, [1, 3, 4, 5, 9, 17, 23]
    layout = build_layout([layer], [layer.window_tokens], tokens_per_block=tpb)
    storage = KvStorage(layout, [64])
    pools = KvPools(layout, [64], device=torch.device("cpu"))
    k_pool, v_pool = pools.layer_kv(0)
    table = torch.full((len(lengths), 8), -1, dtype=torch.int64)
    dense = []
    for row, length in enumerate(lengths):
        cache = storage.new_cache()
        assert cache.resize(length, length - 1)
        table[row, : len(cache.tables[0])] = torch.tensor(cache.tables[0])
        k = torch.randn(length, layer.num_kv_heads, layer.head_dim).to(k_pool.dtype)
        v = k if layer.key_only else torch.randn(length, layer.num_kv_heads, layer.head_dim).to(k_pool.dtype)
        dense.append((k.float(), v.float()))
        live = [p for p in range(length) if cache.tables[0][p // tpb] >= 0]
        rows = table[row : row + 1].expand(len(live), -1)
        positions = torch.tensor(live, dtype=torch.int64)
        write_token_kv(k_pool, rows, positions, k[live])
        if not layer.key_only:
            write_token_kv(v_pool, rows, positions, v[live])
    seq_lens = torch.tensor(lengths)
    q = torch.randn(len(lengths), layer.q_heads, layer.head_dim).to(k_pool.dtype)
    slots, logical, usable = gather_indices(table, seq_lens, layout.life_cycles[0], tpb)
    masked = torch.where(usable, slots, -1)
    window, sinks = layer.window_tokens, layer.sink_tokens
    got = triton_paged_decode(q, k_pool, v_pool, masked, logical, seq_lens, window_tokens=window, sink_tokens=sinks,
                              splits=splits)  # fmt: skip
    torch_path = paged_decode_attention(q, k_pool, v_pool, (slots, logical, usable), seq_lens,
                                        window_tokens=layer.window_tokens, sink_tokens=layer.sink_tokens)  # fmt: skip
    worst = 0.0
    for row in range(len(lengths)):
        want = dense_attention(q[row].float(), *dense[row], window_tokens=layer.window_tokens,
                               sink_tokens=layer.sink_tokens)  # fmt: skip
        for found in (got[row], torch_path[row]):
            worst = max(worst, (found.float() - want).abs().max().item())
    return worst


def main() -> int:
    failed = 0
    for name, layer in LAYERS.items():
        for splits in (1, 3):
            worst = check(name, layer, splits)
            tolerance = 2e-3 if layer.dtype == "float16" else 1e-5
            verdict = "ok" if worst <= tolerance else "MISMATCH"
            failed += verdict != "ok"
            print(f"{name} splits={splits}: max abs error {worst:.2e} {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
