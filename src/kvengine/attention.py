"""Paged decode attention in torch over the block pools, and the dense reference it is checked against.

A life cycle's block table row lists one slot per logical block (-1 = stale or unallocated). For a
sliding window only the blocks that can hold the window are gathered:

    logical blocks gathered = [0 .. sinks) + [start .. start + width),
    start = max(0, (seq_len - W) // B),  width = (W - 1) // B + 2

Token p of logical block i sits at position i*B + p and is attended when p < seq_len and, for a window,
when it is a sink token or p >= seq_len - W. All ops are shape-static, so the step can be CUDA-graphed.

On a GPU with Triton the attention is one paged kernel (triton_attention.py) that reads live blocks in
place; elsewhere the blocks are gathered and attended with torch's fused attention in the pool's dtype.
`dense_attention`, the reference both are checked against, computes in float32.

$KVENGINE_ATTENTION picks the decode step's path (ATTENTION_PATHS); Triton's own TRITON_INTERPRET=1 lets
the Triton paths run on CPU tensors (slowly: the CPU tests' way of checking the kernels):

    triton-folded   the fused step (kvengine.model), the default: one QKV projection of the raw rows, then the
                    paged kernel applies the rows' RMS norm factor, writes the new token's K/V, and its last
                    split merges the others' bf16 partials; two kernels a layer, and 4 % less time than
                    `triton` on an H100's DeepSeek-like step (docs/PERF.md)
    triton          the fused step as it was: a Triton RMS norm kernel, one QKV projection, the paged kernel
                    writes the new token's K/V and a combine kernel merges float32 partials
    triton-unfused  the step before it: torch norm, three projections, torch K/V writes and split merge,
                    around the same paged kernel (a peer for benches, and a fallback)
    torch           the per-op step with gathered blocks and torch's SDPA (no Triton at all)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

import torch
import torch.nn.functional as F

from kvengine.errors import ConfigError, did_you_mean
from kvengine.lifecycle import LifeCycle


def gather_indices(
    table: torch.Tensor, seq_lens: torch.Tensor, cycle: LifeCycle, tokens_per_block: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(slots, logical block ids, block is usable) per request for one life cycle, each [B, n]."""
    batch, max_blocks = table.shape
    device = table.device
    if cycle.window_tokens is None:
        logical = torch.arange(max_blocks, device=device).expand(batch, max_blocks)
        return table, logical, table >= 0
    width = min(max_blocks, (cycle.window_tokens - 1) // tokens_per_block + 2)
    start = torch.clamp((seq_lens - cycle.window_tokens) // tokens_per_block, min=0)
    wanted = start[:, None] + torch.arange(width, device=device)
    logical = torch.clamp(wanted, max=max_blocks - 1)
    # past the table end nothing is gathered; sink blocks come from the sink part below, not twice
    usable = (wanted < max_blocks) & (wanted >= cycle.sink_blocks)
    if cycle.sink_blocks:
        sinks = torch.arange(min(cycle.sink_blocks, max_blocks), device=device).expand(batch, -1)
        logical = torch.cat([sinks, logical], dim=1)
        usable = torch.cat([torch.ones_like(sinks, dtype=torch.bool), usable], dim=1)
    slots = table.gather(1, logical)
    return slots, logical, usable & (slots >= 0)


def new_token_blocks(
    blocks: tuple[torch.Tensor, torch.Tensor, torch.Tensor], positions: torch.Tensor, tokens_per_block: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(pool slot, column in `blocks`) per row of the block its new token at `positions` goes to: the one
    usable column naming that logical block (the fused step's kernel stores the token there)."""
    slots, logical, usable = blocks
    match = usable & (logical == (positions // tokens_per_block)[:, None])
    columns = torch.arange(logical.shape[1], device=logical.device)
    return (match * slots).sum(dim=1), (match * columns).sum(dim=1)


def paged_decode_attention(
    q: torch.Tensor,
    k_pool: torch.Tensor,
    v_pool: torch.Tensor,
    blocks: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    seq_lens: torch.Tensor,
    *,
    window_tokens: int | None,
    sink_tokens: int,
) -> torch.Tensor:
    """One query token per request ([B, q_heads, d]) against its paged KV ([slots, B_tok, kv_heads, d])."""
    slots, logical, usable = blocks
    kernel = _triton_kernel() if runs_triton(q.device) else None
    if kernel is not None:  # the per-op step merges splits in torch too; the fused one in a kernel
        return kernel(q, k_pool, v_pool, torch.where(usable, slots, -1), logical, seq_lens,
                      window_tokens=window_tokens, sink_tokens=sink_tokens,
                      torch_combine=attention_path_from_env() == "triton-unfused")  # fmt: skip
    k, v, valid = gathered_kv(q, k_pool, v_pool, blocks, seq_lens, window_tokens=window_tokens, sink_tokens=sink_tokens)
    # one query token: [B, q_heads, 1, d] against [B, kv_heads, T, d], grouped heads shared (no repeat)
    out = F.scaled_dot_product_attention(
        q[:, :, None, :], k.transpose(1, 2), v.transpose(1, 2), attn_mask=valid[:, None, None, :], enable_gqa=True
    )
    return out[:, :, 0, :]


def gathered_kv(
    q: torch.Tensor,
    k_pool: torch.Tensor,
    v_pool: torch.Tensor,
    blocks: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    seq_lens: torch.Tensor,
    *,
    window_tokens: int | None,
    sink_tokens: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every table column's block gathered ([B, T, kv_heads, d], in q's dtype) and which positions each
    request attends ([B, T]): the torch path's input (and the float32 path the decode bench compares)."""
    slots, logical, usable = blocks
    batch, num_blocks = slots.shape
    tpb, kv_heads, head_dim = k_pool.shape[1:]
    index = slots.clamp(min=0).flatten()  # index_select: about twice as fast as k_pool[index] on CPU
    k = k_pool.index_select(0, index).reshape(batch, num_blocks * tpb, kv_heads, head_dim).to(q.dtype)
    if v_pool is k_pool:  # a key-only layer: its latent is the value too, gathered once
        v = k
    else:
        v = v_pool.index_select(0, index).reshape(batch, num_blocks * tpb, kv_heads, -1).to(q.dtype)
    positions = (logical[:, :, None] * tpb + torch.arange(tpb, device=q.device)).reshape(batch, -1)
    limit = seq_lens[:, None]
    valid = usable[:, :, None].expand(batch, num_blocks, tpb).reshape(batch, -1) & (positions < limit)
    if window_tokens is not None:
        valid &= (positions >= limit - window_tokens) | (positions < sink_tokens)
    return k, v, valid


ATTENTION_ENV_VAR = "KVENGINE_ATTENTION"
ATTENTION_PATHS = ("triton-folded", "triton", "triton-unfused", "torch")  # unset or empty: the first, with Triton


@functools.cache
def _triton_kernel():  # type: ignore[no-untyped-def]
    """The Triton paged kernel, or None where Triton is not installed (CPU-only torch builds) or
    $KVENGINE_ATTENTION is `torch` (the torch path on a GPU too: benches compare the two)."""
    if attention_path_from_env() == "torch":
        return None
    try:
        from kvengine.triton_attention import triton_paged_decode
    except ImportError:
        return None
    return triton_paged_decode


def runs_triton(device: torch.device) -> bool:
    """Whether tensors on `device` take a Triton path: on CUDA, or anywhere under Triton's interpreter."""
    on_device = device.type == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"
    return on_device and _triton_kernel() is not None


def fused_step(device: torch.device) -> bool:
    """Whether the decoder on `device` runs the fused step (the `triton-folded` or `triton` path; see the
    module docstring)."""
    return runs_triton(device) and attention_path_from_env() in ("triton", "triton-folded")


def folded_step(device: torch.device) -> bool:
    """Whether the fused step on `device` folds the norm and the split merge into the paged kernel."""
    return runs_triton(device) and attention_path_from_env() == "triton-folded"


def attention_path_from_env(environ: Mapping[str, str] = os.environ) -> str:
    """The path $KVENGINE_ATTENTION asks for; a value that names none is an error, not the default path
    (a typo must not run the fast path while a bench believes it measures the slow one)."""
    text = environ.get(ATTENTION_ENV_VAR, "").strip()
    if text and text not in ATTENTION_PATHS:
        raise ConfigError(
            f"{ATTENTION_ENV_VAR} must be one of {', '.join(ATTENTION_PATHS)} (or unset), found {text!r}.",
            hint=did_you_mean(text, ATTENTION_PATHS),
        )
    return text or ATTENTION_PATHS[0]


def dense_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, window_tokens: int | None, sink_tokens: int = 0
) -> torch.Tensor:
    """Reference: one request's last token ([q_heads, d]) against all its T tokens ([T, kv_heads, d])."""
    positions = torch.arange(k.shape[0], device=q.device)
    valid = torch.ones_like(positions, dtype=torch.bool)
    if window_tokens is not None:
        valid = (positions >= k.shape[0] - window_tokens) | (positions < sink_tokens)
    return _attend(q[None], k[None], v[None], valid[None])[0]


def write_token_kv(
    pool: torch.Tensor, table: torch.Tensor, positions: torch.Tensor, values: torch.Tensor
) -> None:
    """Store each request's new token ([B, kv_heads, d]) at its position (table rows must hold that block)."""
    tpb = pool.shape[1]
    slots = table.gather(1, (positions // tpb)[:, None])[:, 0]
    pool.index_put_((slots, positions % tpb), values.to(pool.dtype))


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    batch, q_heads, head_dim = q.shape
    kv_heads = k.shape[2]
    grouped = q.reshape(batch, kv_heads, q_heads // kv_heads, head_dim)
    scores = torch.einsum("bkgd,btkd->bkgt", grouped.float(), k.float()) * head_dim**-0.5
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = torch.einsum("bkgt,btkd->bkgd", probs, v.float())
    return out.reshape(batch, q_heads, -1).to(q.dtype)
