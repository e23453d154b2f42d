"""The engine's decoder recomputed densely in float32 from its own weights: what its decode steps are checked
against (test_attention.py on CPU and CUDA, triton_check.py in Triton's interpreter)."""

from __future__ import annotations

import torch

from kvengine.attention import dense_attention
from kvengine.engine import DecodeEngine
from kvengine.model import rms_norm


def reference_decode(engine: DecodeEngine, tokens: list[list[int]]) -> list[torch.Tensor]:
    """Dense re-computation of the engine's decoder: per step, each sequence's hidden state."""
    model, layers = engine.model, engine.model.layers
    keys: list[list[list[torch.Tensor]]] = [[[] for _ in layers] for _ in tokens]
    values: list[list[list[torch.Tensor]]] = [[[] for _ in layers] for _ in tokens]
    hidden_per_step = []
    for step in range(len(tokens[0])):
        rows = []
        for seq, seq_tokens in enumerate(tokens):
            x = model.embed[seq_tokens[step]].cpu().float()
            for layer_id, (layer, w) in enumerate(zip(layers, model.weights, strict=True)):
                h = rms_norm(x[None])[0]
                q = (h @ w.wq.cpu().float()).view(layer.q_heads, layer.head_dim)
                k = (h @ w.wk.cpu().float()).view(layer.num_kv_heads, layer.head_dim)
                v = k if w.wv is None else (h @ w.wv.cpu().float()).view(layer.num_kv_heads, layer.head_dim)
                keys[seq][layer_id].append(k)
                values[seq][layer_id].append(v)
                attn = dense_attention(
                    q,
                    torch.stack(keys[seq][layer_id]),
                    torch.stack(values[seq][layer_id]),
                    window_tokens=engine.sizing.layout.life_cycles[
                        engine.sizing.layout.placements[layer_id].life_cycle_id
                    ].window_tokens,
                    sink_tokens=layer.sink_tokens,
                )
                x = x + attn.reshape(-1) @ w.wo.cpu().float()
            rows.append(x)
        hidden_per_step.append(torch.stack(rows))
    return hidden_per_step
