"""A tiny decoder over a model spec's layers: the workload whose decode step the engine pages and graphs.

Per layer: RMS-normalized input, Q/K/V projections, the new token's K/V written into the pools, paged
attention, output projection added to the residual. Weights are random (seeded): the engine's job is
the cache, not the language. `repeated_layers` run a second time each step, their result dropped and no KV
written: the planted extra cost of $KVENGINE_EXTRA_STEP_COST (kvengine.step_cost).
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
        dtype: torch.dtype, device: torch.device, seed: int = 0, repeated_layers: tuple[int, ...] = (),
    ) -> None:
        generator = torch.Generator(device=device).manual_seed(seed)  # on the device: fast for big models

        def weight(rows: int, cols: int) -> torch.Tensor:
            values = torch.randn(rows, cols, generator=generator, device=device)
            return (values * rows**-0.5).to(dtype)

        self.layers = layers
        self.layout = layout
        self.repeated_layers = frozenset(repeated_layers)
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
        for layer_id in range(len(self.layers)):
            attn = self._layer(layer_id, x, pools, inputs, blocks, seq_lens, write_kv=True)
            if layer_id in self.repeated_layers:  # the planted extra cost: the same work again, result dropped
                self._layer(layer_id, x, pools, inputs, blocks, seq_lens, write_kv=False)
            x = x + attn
        logits = rms_norm(x) @ self.embed.T
        return logits.argmax(dim=-1), x

    def _layer(
        self, layer_id: int, x: torch.Tensor, pools: KvPools, inputs: DecodeInputs,
        blocks: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], seq_lens: torch.Tensor, *, write_kv: bool,
    ) -> torch.Tensor:
        """One layer's contribution to the residual; `write_kv=False` computes it all but stores no K/V."""
        layer, w = self.layers[layer_id], self.weights[layer_id]
        lc_id = self.layout.placements[layer_id].life_cycle_id
        k_pool, v_pool = pools.layer_kv(layer_id)
        h = rms_norm(x)
        q = (h @ w.wq).view(-1, layer.q_heads, layer.head_dim)
        k = (h @ w.wk).view(-1, layer.num_kv_heads, layer.head_dim)
        v = None if w.wv is None else (h @ w.wv).view(-1, layer.num_kv_heads, layer.head_dim)
        if write_kv:
            write_token_kv(k_pool, inputs.tables[lc_id], inputs.positions, k)
            if v is not None:
                write_token_kv(v_pool, inputs.tables[lc_id], inputs.positions, v)
        attn = paged_decode_attention(
            q, k_pool, v_pool, blocks[lc_id], seq_lens,
            window_tokens=self.layout.life_cycles[lc_id].window_tokens, sink_tokens=layer.sink_tokens,
        )  # fmt: skip
        return attn.reshape(x.shape[0], -1) @ w.wo


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.float().pow(2).mean(dim=-1, keepdim=True) + 1e-6).to(x.dtype)
