"""A tiny decoder over a model spec's layers: the workload whose decode step the engine pages and graphs.

Per layer: RMS-normalized input, Q/K/V projections, the new token's K/V written into the pools, paged
attention, output projection added to the residual. Weights are random (seeded): the engine's job is
the cache, not the language. `repeated_layers` run a second time each step, their result dropped and no KV
written: the planted extra cost of $KVENGINE_EXTRA_STEP_COST (kvengine.step_cost).

Two steps compute that (kvengine.attention names the paths). The per-op step is torch ops around the
attention, about 25 kernels a layer. The fused step (Triton on a GPU) is five a layer at most, because a
decode step of 60 layers at 64 rows is bound by kernel count more than bytes:

    RMS norm kernel -> one QKV GEMM (the weights concatenated at load) -> paged kernel (stores the new K/V)
    -> combine kernel (split rows only) -> output GEMM accumulated into the residual in place (addmm_)

Folded (the `triton-folded` path, the default), three: the norm needs no kernel of its own, since it scales each
row by one factor s and norm(x) @ W = s * (x @ W): the QKV GEMM takes the raw rows and the paged kernel, which
reads q and the new K/V of a row anyway, computes s from the row and applies it; and the split of a row that
finishes last merges the others' partials (in bf16 for a bf16 model), where the combine kernel did.

Either fused step may pull what its next kernels read into L2 on a side stream while the current ones run
(kvengine.l2_prefetch; $KVENGINE_L2_PREFETCH names the plan): a layer's output projection from the layer's start,
the next layer's QKV weights after this layer's QKV GEMM, the next layer's KV blocks after this layer's attention.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch

from kvengine.attention import (
    folded_step,
    fused_step,
    gather_indices,
    new_token_blocks,
    paged_decode_attention,
    write_token_kv,
)
from kvengine.lifecycle import CacheLayout
from kvengine.memory import KvPools
from kvengine.spec import LayerSpec


@dataclass(frozen=True)
class LayerWeights:
    """One layer's projections; wq, wk, wv are column views of wqkv (one GEMM for the fused step)."""

    wqkv: torch.Tensor  # [hidden, (q_heads + kv_heads x buffers) * head_dim]: q | k | v (no v when key-only)
    wo: torch.Tensor  # [q_heads * head_dim, hidden]
    q_width: int  # q_heads * head_dim
    kv_width: int  # kv_heads * head_dim
    key_only: bool

    @property
    def wq(self) -> torch.Tensor:
        return self.wqkv[:, : self.q_width]

    @property
    def wk(self) -> torch.Tensor:
        return self.wqkv[:, self.q_width : self.q_width + self.kv_width]

    @property
    def wv(self) -> torch.Tensor | None:
        return None if self.key_only else self.wqkv[:, self.q_width + self.kv_width :]


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
        self.weights = tuple(_layer_weights(layer, hidden_size, weight) for layer in layers)
        self.fused = fused_step(device)
        self.folded = folded_step(device)
        self.norm = _norm_for(self.fused)
        self.prefetcher = _prefetcher_for(device) if self.fused else None

    def forward(self, pools: KvPools, inputs: DecodeInputs) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.embed[inputs.token_ids]
        seq_lens = inputs.positions + 1
        tpb = self.layout.tokens_per_block
        blocks = [
            gather_indices(table, seq_lens, cycle, tpb)
            for table, cycle in zip(inputs.tables, self.layout.life_cycles, strict=True)
        ]
        if self.fused:  # once a step per life cycle, not once a layer: the kernel's slot lists (-1: skip), and
            # where each row's new token goes
            blocks = [(torch.where(usable, slots, -1), logical, usable) for slots, logical, usable in blocks]
            new_blocks = [new_token_blocks(b, inputs.positions, tpb) for b in blocks]
        attend = functools.partial(self._fused_attention, new_blocks=new_blocks) if self.fused else self._attention
        with self.prefetcher.joined() if self.prefetcher else contextlib.nullcontext():
            for layer_id in range(len(self.layers)):
                wo = self.weights[layer_id].wo
                if self.prefetcher and self.prefetcher.plan.output_ahead:
                    self.prefetcher.prefetch(wo)  # read by this layer's last GEMM, after its QKV GEMM and attention
                attn = attend(layer_id, x, pools, inputs, blocks, seq_lens, write_kv=True)
                if self.prefetcher and self.prefetcher.plan.next_kv and layer_id + 1 < len(self.layers):
                    self._prefetch_kv(layer_id + 1, pools, blocks)  # during this output GEMM and the next QKV GEMM
                if layer_id in self.repeated_layers:  # the planted extra cost: the same work again, result dropped
                    attend(layer_id, x, pools, inputs, blocks, seq_lens, write_kv=False) @ wo
                # in place: one GEMM accumulating into the residual (x is this step's own, from the embedding)
                x = x.addmm_(attn, wo) if self.fused else x + attn @ wo
        logits = self.norm(x) @ self.embed.T
        return logits.argmax(dim=-1), x

    def _prefetch_kv(
        self, layer_id: int, pools: KvPools, blocks: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]
    ) -> None:
        """The blocks layer `layer_id` attends over, into L2 (its K and V buffers; the slot lists masked)."""
        assert self.prefetcher is not None
        slots = blocks[self.layout.placements[layer_id].life_cycle_id][0]
        k_pool, v_pool = pools.layer_kv(layer_id)
        for pool in (k_pool,) if v_pool is k_pool else (k_pool, v_pool):
            self.prefetcher.prefetch_blocks(pool, slots)

    def _attention(
        self, layer_id: int, x: torch.Tensor, pools: KvPools, inputs: DecodeInputs,
        blocks: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], seq_lens: torch.Tensor, *, write_kv: bool,
    ) -> torch.Tensor:
        """The per-op step's attention output [B, q_heads * d]; `write_kv=False` stores no K/V."""
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
        return attn.reshape(x.shape[0], -1)

    def _fused_attention(
        self, layer_id: int, x: torch.Tensor, pools: KvPools, inputs: DecodeInputs,
        blocks: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], seq_lens: torch.Tensor, *, write_kv: bool,
        new_blocks: list[tuple[torch.Tensor, torch.Tensor]],
    ) -> torch.Tensor:
        """The fused step's: the norm kernel, one QKV GEMM, the paged kernel storing the new K/V (unless not
        `write_kv`: the pool holds them already); blocks' slots already masked. Folded: the GEMM of the raw
        rows, whose RMS norm factor the paged kernel applies, and no combine kernel. The views into the QKV
        output are passed as they are."""
        from kvengine.triton_attention import NewToken, default_launch, triton_paged_decode  # only where Triton runs

        layer, w = self.layers[layer_id], self.weights[layer_id]
        lc_id = self.layout.placements[layer_id].life_cycle_id
        k_pool, v_pool = pools.layer_kv(layer_id)
        qkv = (x if self.folded else self.norm(x)) @ w.wqkv
        if write_kv and self.prefetcher and self.prefetcher.plan.next_qkv and layer_id + 1 < len(self.layers):
            self.prefetcher.prefetch(self.weights[layer_id + 1].wqkv)  # during this attention and output GEMM
        # folded: bf16 partials, where they help (the last split reads them; a combine kernel, they cost)
        launch = dataclasses.replace(default_launch(layer.head_dim, self.layout.tokens_per_block),
                                     last_split_merges=self.folded, narrow_partials=self.folded)  # fmt: skip
        heads = (-1, layer.num_kv_heads, layer.head_dim)
        q = qkv[:, : w.q_width].view(-1, layer.q_heads, layer.head_dim)
        k = qkv[:, w.q_width : w.q_width + w.kv_width].view(heads)
        v = None if w.key_only else qkv[:, w.q_width + w.kv_width :].view(heads)
        slots, logical, _ = blocks[lc_id]
        attn = triton_paged_decode(
            q, k_pool, v_pool, slots, logical, seq_lens, window_tokens=self.layout.life_cycles[lc_id].window_tokens,
            sink_tokens=layer.sink_tokens, new_token=NewToken(k, v, *new_blocks[lc_id]) if write_kv else None,
            normed_rows=x if self.folded else None, launch=launch,
        )  # fmt: skip
        return attn.view(x.shape[0], -1)


def _prefetcher_for(device: torch.device):  # type: ignore[no-untyped-def]
    """The fused step's L2 prefetches (kvengine.l2_prefetch) on a CUDA device when its plan asks for any."""
    if device.type != "cuda":
        return None
    from kvengine import l2_prefetch  # only where Triton runs

    plan = l2_prefetch.plan_from_env()
    return l2_prefetch.SideStream(device, plan) if plan.any else None


def _layer_weights(layer: LayerSpec, hidden_size: int, weight: Callable[[int, int], torch.Tensor]) -> LayerWeights:
    q_width, kv_width = layer.q_heads * layer.head_dim, layer.num_kv_heads * layer.head_dim
    # drawn one by one as before the concatenation (q, k, v, o), so a seed gives the same numbers
    parts = [weight(hidden_size, width) for width in (q_width, kv_width, kv_width)[: 1 + len(layer.roles)]]
    wqkv, wo = torch.cat(parts, dim=1), weight(q_width, hidden_size)
    return LayerWeights(linear_layout(wqkv), linear_layout(wo), q_width, kv_width, layer.key_only)


def linear_layout(weight: torch.Tensor) -> torch.Tensor:
    """`weight` [in, out] as a view of an [out, in] tensor: the same values and products, stored as checkpoints
    and torch.nn.Linear keep a projection. cuBLAS streams it neither faster nor slower than a row-major copy at
    the bandwidth cases' shapes on an H100 (docs/PERF.md, "The step's memory layouts")."""
    return weight.T.contiguous().T


RMS_NORM_EPS = 1e-6


def rms_norm(x: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.float().pow(2).mean(dim=-1, keepdim=True) + RMS_NORM_EPS).to(x.dtype)


def _norm_for(fused: bool):  # type: ignore[no-untyped-def]
    """The fused step's norm kernel, else the torch expression (seven kernels on a GPU)."""
    if not fused:
        return rms_norm
    from kvengine.triton_norm import triton_rms_norm  # imported only where Triton runs

    return triton_rms_norm
