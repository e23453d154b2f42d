"""Paged decode attention as one Triton kernel: K/V read straight from the pool blocks the table names.

The torch path gathers every table column into a dense copy first (a read and a write of each block, whether
live or not) and attends over the copy; this kernel reads each live block once, in the pool's dtype, and
skips stale or unallocated ones (their loads are masked off), so a decode step moves about the bytes it must.

    grid (batch row, KV head, split): the row's query heads of that KV head (a GQA group, padded to 16 for
    tl.dot) against its blocks [split * per_split, (split + 1) * per_split), online softmax in float32.
    One split writes the output; several (few rows x KV heads to fill the GPU) write partial (m, l, acc)
    that `_combine` merges. Masks are the torch path's: position < seq_len, and for a window
    position >= seq_len - W or < sink_tokens.

Shapes are static per call, so the step stays CUDA-graphable. `TRITON_INTERPRET=1` runs it on CPU tensors
(how the CPU tests check it against the dense reference).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl


@triton.jit
def _paged_decode_kernel(
    Q, K, V, SLOTS, LOGICAL, SEQ_LENS, OUT, M_OUT, L_OUT,
    stride_qb, stride_qh, stride_ks, stride_kt, stride_kh, stride_vs, stride_vt, stride_vh,
    stride_tb, stride_ob, stride_oh, stride_ms, stride_mb,
    window, sink_tokens, scale, n_blocks,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    TPB: tl.constexpr, BLOCK_T: tl.constexpr, HAS_WINDOW: tl.constexpr, SPLIT: tl.constexpr,
    PRECISION: tl.constexpr, PER_SPLIT: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    kv_head = tl.program_id(1)
    split = tl.program_id(2)
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    t = tl.arange(0, BLOCK_T)
    heads = kv_head * GROUP + g
    g_ok = g < GROUP
    d_ok = d < HEAD_DIM
    q = tl.load(Q + row * stride_qb + heads[:, None] * stride_qh + d[None, :], mask=g_ok[:, None] & d_ok[None, :],
                other=0.0)  # fmt: skip
    seq_len = tl.load(SEQ_LENS + row)
    m = tl.full([BLOCK_G], -1.0e30, dtype=tl.float32)
    l_sum = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    for step in range(0, PER_SPLIT):
        column = split * PER_SPLIT + step
        in_table = column < n_blocks  # the last split may have fewer columns
        slot = tl.load(SLOTS + row * stride_tb + column, mask=in_table, other=-1)
        logical = tl.load(LOGICAL + row * stride_tb + column, mask=in_table, other=0)
        safe = tl.maximum(slot, 0).to(tl.int64)
        for start in range(0, TPB, BLOCK_T):
            offset = start + t
            position = logical * TPB + offset
            valid = (slot >= 0) & (offset < TPB) & (position < seq_len)
            if HAS_WINDOW:
                valid = valid & ((position >= seq_len - window) | (position < sink_tokens))
            k = tl.load(K + safe * stride_ks + offset[:, None] * stride_kt + kv_head * stride_kh + d[None, :],
                        mask=valid[:, None] & d_ok[None, :], other=0.0)  # fmt: skip
            scores = tl.dot(q, tl.trans(k.to(q.dtype)), input_precision=PRECISION) * scale
            scores = tl.where(valid[None, :], scores, -1.0e30)
            m_new = tl.maximum(m, tl.max(scores, 1))
            p = tl.where(valid[None, :], tl.exp(scores - m_new[:, None]), 0.0)
            alpha = tl.exp(m - m_new)
            v = tl.load(V + safe * stride_vs + offset[:, None] * stride_vt + kv_head * stride_vh + d[None, :],
                        mask=valid[:, None] & d_ok[None, :], other=0.0)  # fmt: skip
            acc = acc * alpha[:, None] + tl.dot(p.to(q.dtype), v.to(q.dtype), input_precision=PRECISION)
            l_sum = l_sum * alpha + tl.sum(p, 1)
            m = m_new
    out_mask = g_ok[:, None] & d_ok[None, :]
    if SPLIT:
        base = split * stride_ms + row * stride_mb + heads
        tl.store(M_OUT + base, m, mask=g_ok)
        tl.store(L_OUT + base, l_sum, mask=g_ok)
        tl.store(OUT + (split * stride_ms + row * stride_mb + heads)[:, None] * HEAD_DIM + d[None, :], acc,
                 mask=out_mask)  # fmt: skip
    else:
        out = acc / tl.maximum(l_sum, 1.0e-30)[:, None]
        tl.store(OUT + row * stride_ob + heads[:, None] * stride_oh + d[None, :], out.to(OUT.dtype.element_ty),
                 mask=out_mask)  # fmt: skip


@functools.cache
def _multiprocessors(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 1


def _next_power_of_two(value: int, *, at_least: int) -> int:
    return max(at_least, 1 << (value - 1).bit_length())


def triton_paged_decode(
    q: torch.Tensor,
    k_pool: torch.Tensor,
    v_pool: torch.Tensor,
    slots: torch.Tensor,
    logical: torch.Tensor,
    seq_lens: torch.Tensor,
    *,
    window_tokens: int | None,
    sink_tokens: int,
    splits: int | None = None,
) -> torch.Tensor:
    """Attention of q [B, q_heads, d] over the pool blocks `slots` [B, n] (-1: skip), `logical` their
    logical block ids; the torch path's semantics (see kvengine.attention). `splits`: force a split count."""
    batch, q_heads, head_dim = q.shape
    tpb, kv_heads = k_pool.shape[1], k_pool.shape[2]
    group = q_heads // kv_heads
    n_blocks = slots.shape[1]
    q = q.contiguous()
    slots, logical = slots.contiguous(), logical.contiguous()
    # enough programs to fill the GPU twice: split a row's blocks when rows x KV heads are few
    if splits is None:
        splits = -(-2 * _multiprocessors(q.device) // max(1, batch * kv_heads))
    splits = max(1, min(n_blocks, splits))
    per_split = -(-n_blocks // splits)
    splits = -(-n_blocks // per_split)
    block_d = _next_power_of_two(head_dim, at_least=16)
    block_t = min(_next_power_of_two(tpb, at_least=16), 64 if block_d <= 128 else 16)
    precision = "ieee" if q.dtype == torch.float32 else "tf32"
    out = torch.empty_like(q)
    if splits > 1:
        partial = torch.empty((splits, batch, q_heads, head_dim), dtype=torch.float32, device=q.device)
        m_out = torch.empty((splits, batch, q_heads), dtype=torch.float32, device=q.device)
        l_out = torch.empty_like(m_out)
        target, stride_ms, stride_mb = partial, batch * q_heads, q_heads
    else:
        target, m_out, l_out, stride_ms, stride_mb = out, out, out, 0, 0
    _paged_decode_kernel[(batch, kv_heads, splits)](
        q, k_pool, v_pool, slots, logical, seq_lens, target, m_out, l_out,
        q.stride(0), q.stride(1), k_pool.stride(0), k_pool.stride(1), k_pool.stride(2),
        v_pool.stride(0), v_pool.stride(1), v_pool.stride(2),
        slots.stride(0), out.stride(0), out.stride(1), stride_ms, stride_mb,
        window_tokens or 0, sink_tokens, head_dim**-0.5, n_blocks,
        GROUP=group, BLOCK_G=_next_power_of_two(group, at_least=16), HEAD_DIM=head_dim, BLOCK_D=block_d,
        TPB=tpb, BLOCK_T=block_t, HAS_WINDOW=window_tokens is not None, SPLIT=splits > 1, PRECISION=precision,
        PER_SPLIT=per_split,
    )  # fmt: skip
    if splits == 1:
        return out
    return _combine(partial, m_out, l_out).to(q.dtype)


def _combine(partial: torch.Tensor, m: torch.Tensor, l_sum: torch.Tensor) -> torch.Tensor:
    """Merge split-wise online-softmax partials: sum_s acc_s e^(m_s - m) / sum_s l_s e^(m_s - m)."""
    top = m.max(dim=0).values
    weight = torch.exp(m - top)
    return (partial * weight[..., None]).sum(0) / (l_sum * weight).sum(0).clamp_min(1e-30)[..., None]
