"""A tiny decoder over a model spec's layers: the workload whose decode step the engine pages and graphs.

Per layer: RMS-normalized input, Q/K/V projections, the new token's K/V written into the pools, paged
attention, output projection added to the residual. Weights are random (seeded): the engine's job is
the cache, not the language.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvengine.attention import gather_indices, paged_decode_attention, write_token_kv
from kvengine.lifecycle import CacheLayout
from kvengine.memory import KvPools
from kvengine.spec import LayerSpec


@dataclass(frozen=True)
class LayerWeights:
    wq: torch.Tensor  # [hidden, q_heads * head_dim]
    wk: torch.Tensor  # [hidden, kv_heads * head_dim]
    wv: torch.Tensor | None  # None for key-only layers
    wo: torch.Tensor  # [q_heads * head_dim, hidden]


@dataclass(frozen=True)
class DecodeInputs:
    """One step's inputs: token ids and positions [B], one block table [B, max_blocks] per life cycle."""

    token_ids: torch.Tensor
    positions: torch.Tensor
    tables: tuple[torch.Tensor, ...]

    def rows(self, count: int) -> DecodeInputs:
        return DecodeInputs(self.token_ids[:count], self.positions[:count], tuple(t[:count] for t in self.tables))


class TinyDecoder:
    """Random-weight decoder; `forward` runs one decode step for a batch and returns (next ids, hidden)."""

    def __init__(
        self, layers: tuple[LayerSpec, ...], layout: CacheLayout, *, hidden_size: int, vocab_size: int,
        dtype: torch.dtype, device: torch.device, seed: int = 0,
    ) -> None:
        generator = torch.Generator(device=device).manual_seed(seed)  # on the device: fast for big models

        def weight(rows: int, cols: int) -> torch.Tensor:
            values = torch.randn(rows, cols, generator=generator, device=device)
            return (values * rows**-0.5).to(dtype)

        self.layers = layers
        self.layout = layout
        self.embed = weight(vocab_size, hidden_size) * vocab_size**0.5
        self.weights = tuple(
            LayerWeights(
                wq=weight(hidden_size, layer.q_heads * layer.head_dim),
                wk=weight(hidden_size, layer.num_kv_heads * layer.head_dim),
                wv=None if layer.key_only else weight(hidden_size, layer.num_kv_heads * layer.head_dim),
                wo=weight(layer.q_heads * layer.head_dim, hidden_size),
            )
            for layer in layers
        )

    def forward(self, pools: KvPools, inputs: DecodeInputs) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.embed[inputs.token_ids]
        seq_lens = inputs.positions + 1
        tpb = self.layout.tokens_per_block
        blocks = [
            gather_indices(table, seq_lens, cycle, tpb)
            for table, cycle in zip(inputs.tables, self.layout.life_cycles, strict=True)
        ]
        for layer_id, (layer, w) in enumerate(zip(self.layers, self.weights, strict=True)):
            lc_id = self.layout.placements[layer_id].life_cycle_id
            k_pool, v_pool = pools.layer_kv(layer_id)
            h = rms_norm(x)
            q = (h @ w.wq).view(-1, layer.q_heads, layer.head_dim)
            k = (h @ w.wk).view(-1, layer.num_kv_heads, layer.head_dim)
            write_token_kv(k_pool, inputs.tables[lc_id], inputs.positions, k)
            if w.wv is not None:
                write_token_kv(v_pool, inputs.tables[lc_id], inputs.positions,
                               (h @ w.wv).view(-1, layer.num_kv_heads, layer.head_dim))
            attn = paged_decode_attention(
                q, k_pool, v_pool, blocks[lc_id], seq_lens,
                window_tokens=self.layout.life_cycles[lc_id].window_tokens, sink_tokens=layer.sink_tokens,
            )
            x = x + attn.reshape(x.shape[0], -1) @ w.wo
        logits = rms_norm(x) @ self.embed.T
        return logits.argmax(dim=-1), x


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.float().pow(2).mean(dim=-1, keepdim=True) + 1e-6).to(x.dtype)
