"""Paged decode attention as one Triton kernel: K/V read straight from the pool blocks the table names.

The torch path gathers every table column into a dense copy first (a read and a write of each block, whether
live or not) and attends over the copy; this kernel reads each live block once, in the pool's dtype, and
skips stale or unallocated ones (their loads are masked off), so a decode step moves about the bytes it must.

    grid (batch row, KV head x head part, split): the row's query heads of that KV head (a GQA group, padded to
    16 for tl.dot; with PagedLaunch.head_parts, one part of them a program) against its tiles
    [split * per_split, (split + 1) * per_split), online softmax in float32.
    A tile is BLOCK_T tokens of one block: tile i is column i // tiles_per_block of the table. One split
    writes the output; several (few rows x KV heads to fill the GPU) write partial (m, l, acc) that one
    small combine kernel merges, or (PagedLaunch.last_split_merges) the split that arrives last merges
    them, an atomic counter per row and KV head telling which: no second kernel. Masks are the torch
    path's: position < seq_len, and for a window position >= seq_len - W or < sink_tokens.

The fused step passes the new token too (NewToken: K/V views into the QKV projection, its block's slot and
column): each program whose tiles hold position seq_len - 1 (one a head part) stores it there before its loop,
behind a CTA barrier, and reads it back like any token; where head parts store it, they store the same bytes. No
other program reads that position, and no torch op writes the pools. With PagedLaunch.token_in_registers the
tiles skip that position and the holder attends the token from registers after its loop, then stores it. A
key-only layer's K tile is its V tile.

Shapes are static per call, so the step stays CUDA-graphable. `TRITON_INTERPRET=1` runs it on CPU tensors
(how the CPU tests check it against the dense reference).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

try:  # Triton >= 3.4; PagedLaunch.pdl is ignored without it
    from triton.language.extra.cuda import gdc_wait
except ImportError:  # pragma: no cover - older Triton
    gdc_wait = None

from kvengine.model import RMS_NORM_EPS
from kvengine.triton_norm import rms_factor


@triton.jit
def _scores(q, k, valid, m, scale, PRECISION: tl.constexpr):  # type: ignore[no-untyped-def]
    """One tile's online-softmax step: the running max with its scaled scores (valid tokens only), their
    exponentials against it, and the factor that rescales what was summed before."""
    scores = tl.dot(q, tl.trans(k.to(q.dtype)), input_precision=PRECISION) * scale
    scores = tl.where(valid[None, :], scores, -1.0e30)
    m_new = tl.maximum(m, tl.max(scores, 1))
    p = tl.where(valid[None, :], tl.exp(scores - m_new[:, None]), 0.0)
    return m_new, p, tl.exp(m - m_new)


@triton.jit
def _tile(  # type: ignore[no-untyped-def]
    SLOTS, LOGICAL, row, tile, wanted, seq_len, stored, window, sink_tokens, t, d_ok, stride_tb, stride_lb,
    TPB: tl.constexpr, BLOCK_T: tl.constexpr, HAS_WINDOW: tl.constexpr,
):  # fmt: skip
    """Where a tile's tokens sit (pool slot, offset in the block) and which of them count, as the K/V loads'
    mask; `wanted` False masks it all (a tile past the table, or a prefetch past the split's last tile). Positions
    from `stored` on are not read (the new token, when attended from registers)."""
    tiles_per_block: tl.constexpr = (TPB + BLOCK_T - 1) // BLOCK_T
    column = tile // tiles_per_block
    slot = tl.load(SLOTS + row * stride_tb + column, mask=wanted, other=-1)
    logical = tl.load(LOGICAL + row * stride_lb + column, mask=wanted, other=0)
    offset = (tile % tiles_per_block) * BLOCK_T + t
    position = logical * TPB + offset
    valid = (slot >= 0) & (offset < TPB) & (position < stored)
    if HAS_WINDOW:
        valid = valid & ((position >= seq_len - window) | (position < sink_tokens))
    return tl.maximum(slot, 0).to(tl.int64), offset, valid, valid[:, None] & d_ok[None, :]


@triton.jit
def _tokens(POOL, safe, offset, kv_mask, head_at, d, stride_s, stride_t):  # type: ignore[no-untyped-def]
    """A tile's K or V rows of one KV head (masked-off tokens read as zeros, and cost no memory traffic)."""
    return tl.load(POOL + safe * stride_s + offset[:, None] * stride_t + head_at + d[None, :], mask=kv_mask,
                   other=0.0)  # fmt: skip


@triton.jit
def _scaled(AT, mask, norm, NORM_ROWS: tl.constexpr):  # type: ignore[no-untyped-def]
    """The new token's K or V row of a KV head, its RMS norm's factor applied where the rows were raw."""
    token = tl.load(AT, mask=mask, other=0.0)
    return token.to(tl.float32) * norm if NORM_ROWS else token


@triton.jit
def _store_token(  # type: ignore[no-untyped-def]
    K, V, slot, offset, kv_head, d, mask, k_new, v_new, stride_ks, stride_kt, stride_kh, stride_vs, stride_vt,
    stride_vh, KEY_ONLY: tl.constexpr,
):  # fmt: skip
    """The new token into its block's slot, at its offset in the block."""
    tl.store(K + slot * stride_ks + offset * stride_kt + kv_head * stride_kh + d, k_new.to(K.dtype.element_ty),
             mask=mask)  # fmt: skip
    if not KEY_ONLY:
        tl.store(V + slot * stride_vs + offset * stride_vt + kv_head * stride_vh + d, v_new.to(V.dtype.element_ty),
                 mask=mask)  # fmt: skip


@triton.jit
def _merge_splits(  # type: ignore[no-untyped-def]
    PARTIAL, M, L, MERGED, ARRIVED_AT, at, g_ok, stride_s, merged_at, HEAD_DIM: tl.constexpr,
    BLOCK_G: tl.constexpr, BLOCK_D: tl.constexpr, SPLITS: tl.constexpr, BLOCK_S: tl.constexpr,
):  # fmt: skip
    """The combine kernel's math for one (row, KV head)'s query heads, run by the split that arrived last: its
    acquire saw every other split's partial. `.cg` loads skip L1, which may hold lines from before. Every split's
    max and sum come in one load, and each column chunk's partials split by split in an unrolled loop, so the
    loads are in flight together: this merge is the tail of each layer's call, where a loop over the splits cost
    an L2 round trip a split and pass. 64 columns at a time: the unrolled loads' registers (no spill for sm_90
    at the bandwidth cases' shapes: bench/paged_kernel_registers.py)."""
    s = tl.arange(0, BLOCK_S)
    both = (s < SPLITS)[:, None] & g_ok[None, :]
    ms = tl.load(M + s[:, None] * stride_s + at[None, :], mask=both, other=-1.0e30, cache_modifier=".cg")
    sums = tl.load(L + s[:, None] * stride_s + at[None, :], mask=both, other=0.0, cache_modifier=".cg")
    weights = tl.where(both, tl.exp(ms - tl.max(ms, 0)[None, :]), 0.0)  # [splits, heads]
    total = tl.sum(weights * sums, 0)
    CHUNK: tl.constexpr = BLOCK_D if BLOCK_D < 64 else 64
    for first in tl.static_range(0, BLOCK_D, CHUNK):
        d = first + tl.arange(0, CHUNK)
        mask = g_ok[:, None] & (d < HEAD_DIM)[None, :]
        out = tl.zeros([BLOCK_G, CHUNK], dtype=tl.float32)
        for split in tl.static_range(0, SPLITS):
            weight = tl.sum(tl.where(s[:, None] == split, weights, 0.0), 0)  # row `split` of weights
            acc = tl.load(PARTIAL + (split * stride_s + at)[:, None] * HEAD_DIM + d[None, :], mask=mask, other=0.0,
                          cache_modifier=".cg")  # fmt: skip
            out += acc * weight[:, None]
        out = out / tl.maximum(total, 1.0e-30)[:, None]
        tl.store(merged_at + d[None, :], out.to(MERGED.dtype.element_ty), mask=mask)
    tl.atomic_xchg(ARRIVED_AT, 0)  # zero again for the next call (a graph replays the same counters)


@triton.jit
def _paged_decode_kernel(
    Q, K, V, K_NEW, V_NEW, NEW_SLOTS, NEW_COLUMNS, SLOTS, LOGICAL, SEQ_LENS, OUT, M_OUT, L_OUT, MERGED, ARRIVED,
    NORMED, stride_xb, hidden, eps,
    stride_qb, stride_qh, stride_nb, stride_nh, stride_vnb, stride_vnh,
    stride_ks, stride_kt, stride_kh, stride_vs, stride_vt, stride_vh,
    stride_tb, stride_lb, stride_ob, stride_oh, stride_ms, stride_mb, stride_fb, stride_fh,
    window, sink_tokens, scale, n_tiles, n_splits,
    GROUP: tl.constexpr, BLOCK_G: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    TPB: tl.constexpr, BLOCK_T: tl.constexpr, HAS_WINDOW: tl.constexpr, SPLIT: tl.constexpr,
    PRECISION: tl.constexpr, PER_SPLIT: tl.constexpr, KEY_ONLY: tl.constexpr, STORE_NEW: tl.constexpr,
    V_WITH_K: tl.constexpr, LAST_MERGES: tl.constexpr, NORM_ROWS: tl.constexpr, BLOCK_H: tl.constexpr,
    PREFETCH: tl.constexpr, HEAD_PARTS: tl.constexpr, PDL: tl.constexpr, SPLITS: tl.constexpr,
    BLOCK_S: tl.constexpr, TOKEN_IN_REGISTERS: tl.constexpr,
):  # fmt: skip
    if PDL:  # launched early (PagedLaunch.pdl): every input below may be the kernel before's output
        gdc_wait()
    row = tl.program_id(0)
    kv_part = tl.program_id(1)  # kv_head * HEAD_PARTS + part
    kv_head = kv_part // HEAD_PARTS
    split = tl.program_id(2)
    PART: tl.constexpr = GROUP // HEAD_PARTS  # query heads a program
    g = tl.arange(0, BLOCK_G)
    d = tl.arange(0, BLOCK_D)
    t = tl.arange(0, BLOCK_T)
    heads = kv_head * GROUP + (kv_part % HEAD_PARTS) * PART + g
    g_ok = g < PART
    d_ok = d < HEAD_DIM
    q = tl.load(Q + row * stride_qb + heads[:, None] * stride_qh + d[None, :], mask=g_ok[:, None] & d_ok[None, :],
                other=0.0)  # fmt: skip
    norm = 1.0
    if NORM_ROWS:  # q, k, v are projections of the raw row: its RMS norm's scale, applied here (module docstring)
        cols = tl.arange(0, BLOCK_H)
        normed = tl.load(NORMED + row * stride_xb + cols, mask=cols < hidden, other=0.0)
        norm = rms_factor(normed, hidden, eps).to(tl.float32)
        q = (q.to(tl.float32) * norm).to(q.dtype)
    seq_len = tl.load(SEQ_LENS + row)
    tiles_per_block: tl.constexpr = (TPB + BLOCK_T - 1) // BLOCK_T
    stored = seq_len  # the positions read from the pool: below it
    if STORE_NEW:  # the program whose tiles hold position seq_len - 1 stores the new token there (one a head part)
        new_offset = (seq_len - 1) % TPB
        new_tile = tl.load(NEW_COLUMNS + row) * tiles_per_block + new_offset // BLOCK_T
        holder = new_tile // PER_SPLIT == split
        new_slot = tl.load(NEW_SLOTS + row, mask=holder, other=0).to(tl.int64)
        k_new = _scaled(K_NEW + row * stride_nb + kv_head * stride_nh + d, d_ok & holder, norm, NORM_ROWS)
        v_new = k_new if KEY_ONLY else _scaled(V_NEW + row * stride_vnb + kv_head * stride_vnh + d, d_ok & holder,
                                                norm, NORM_ROWS)  # fmt: skip
        if TOKEN_IN_REGISTERS:  # attended after the loop, stored there: nothing holds the tile loads back
            stored = seq_len - 1
        else:  # stored first, then read back with its tile, behind a CTA barrier
            _store_token(K, V, new_slot, new_offset, kv_head, d, d_ok & holder, k_new, v_new, stride_ks, stride_kt,
                         stride_kh, stride_vs, stride_vt, stride_vh, KEY_ONLY)  # fmt: skip
            tl.debug_barrier()
    m = tl.full([BLOCK_G], -1.0e30, dtype=tl.float32)
    l_sum = tl.zeros([BLOCK_G], dtype=tl.float32)
    acc = tl.zeros([BLOCK_G, BLOCK_D], dtype=tl.float32)
    first = split * PER_SPLIT
    k_at, v_at = kv_head * stride_kh, kv_head * stride_vh
    if PREFETCH:  # the next tile's K and V are in flight while this one is computed: two tiles a program
        safe, offset, valid_next, kv_mask = _tile(SLOTS, LOGICAL, row, first, first < n_tiles, seq_len, stored,
                                                  window, sink_tokens, t, d_ok, stride_tb, stride_lb, TPB, BLOCK_T,
                                                  HAS_WINDOW)  # fmt: skip
        k_next = _tokens(K, safe, offset, kv_mask, k_at, d, stride_ks, stride_kt)
        v_next = k_next if KEY_ONLY else _tokens(V, safe, offset, kv_mask, v_at, d, stride_vs, stride_vt)
    for step in range(0, PER_SPLIT):  # one flat loop over tiles: one loop for the compiler to pipeline
        tile = first + step
        if PREFETCH:
            k, v, valid = k_next, v_next, valid_next
            wanted = (step + 1 < PER_SPLIT) & (tile + 1 < n_tiles)
            safe, offset, valid_next, kv_mask = _tile(SLOTS, LOGICAL, row, tile + 1, wanted, seq_len, stored,
                                                      window, sink_tokens, t, d_ok, stride_tb, stride_lb, TPB,
                                                      BLOCK_T, HAS_WINDOW)  # fmt: skip
            k_next = _tokens(K, safe, offset, kv_mask, k_at, d, stride_ks, stride_kt)
            v_next = k_next if KEY_ONLY else _tokens(V, safe, offset, kv_mask, v_at, d, stride_vs, stride_vt)
            m_new, p, alpha = _scores(q, k, valid, m, scale, PRECISION)
        else:
            safe, offset, valid, kv_mask = _tile(SLOTS, LOGICAL, row, tile, tile < n_tiles, seq_len, stored,
                                                 window, sink_tokens, t, d_ok, stride_tb, stride_lb, TPB, BLOCK_T,
                                                 HAS_WINDOW)  # fmt: skip
            k = _tokens(K, safe, offset, kv_mask, k_at, d, stride_ks, stride_kt)
            if V_WITH_K and not KEY_ONLY:  # both loads in flight together, for a tile's worth more registers
                v = _tokens(V, safe, offset, kv_mask, v_at, d, stride_vs, stride_vt)
            m_new, p, alpha = _scores(q, k, valid, m, scale, PRECISION)
            if KEY_ONLY:  # the latent is the value too: one load serves both products
                v = k
            elif not V_WITH_K:
                v = _tokens(V, safe, offset, kv_mask, v_at, d, stride_vs, stride_vt)
        acc = acc * alpha[:, None] + tl.dot(p.to(q.dtype), v.to(q.dtype), input_precision=PRECISION)
        l_sum = l_sum * alpha + tl.sum(p, 1)
        m = m_new
    if STORE_NEW and TOKEN_IN_REGISTERS:  # the holder's online-softmax step of one more token, from registers
        k_held = k_new.to(K.dtype.element_ty).to(tl.float32)  # the bytes the pool holds, as tiles read them
        v_held = v_new.to(V.dtype.element_ty).to(tl.float32)
        score = tl.where(holder, tl.sum(q.to(tl.float32) * k_held[None, :], 1) * scale, -1.0e30)
        m_new = tl.maximum(m, score)
        p_new = tl.where(holder, tl.exp(score - m_new), 0.0)
        alpha = tl.exp(m - m_new)
        acc = acc * alpha[:, None] + p_new[:, None] * v_held[None, :]
        l_sum = l_sum * alpha + p_new
        m = m_new
        _store_token(K, V, new_slot, new_offset, kv_head, d, d_ok & holder, k_new, v_new, stride_ks, stride_kt,
                     stride_kh, stride_vs, stride_vt, stride_vh, KEY_ONLY)  # fmt: skip
    out_mask = g_ok[:, None] & d_ok[None, :]
    if SPLIT:
        base = split * stride_ms + row * stride_mb + heads
        tl.store(M_OUT + base, m, mask=g_ok)
        tl.store(L_OUT + base, l_sum, mask=g_ok)
        tl.store(OUT + base[:, None] * HEAD_DIM + d[None, :], acc.to(OUT.dtype.element_ty), mask=out_mask)
        if LAST_MERGES:  # the split that arrives last merges them all: no combine kernel after this one
            tl.debug_barrier()  # every thread's partial stored before the release below
            counter = ARRIVED + row * tl.num_programs(1) + kv_part
            arrived = tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu")
            if arrived == n_splits - 1:
                _merge_splits(OUT, M_OUT, L_OUT, MERGED, counter,
                              row * stride_mb + heads, g_ok, stride_ms,
                              MERGED + row * stride_fb + heads[:, None] * stride_fh, HEAD_DIM, BLOCK_G,
                              BLOCK_D, SPLITS, BLOCK_S)  # fmt: skip
    else:
        out = acc / tl.maximum(l_sum, 1.0e-30)[:, None]
        tl.store(OUT + row * stride_ob + heads[:, None] * stride_oh + d[None, :], out.to(OUT.dtype.element_ty),
                 mask=out_mask)  # fmt: skip


@triton.jit
def _combine_kernel(
    PARTIAL, M, L, OUT, stride_s, stride_ob, stride_oh, q_heads,
    SPLITS: tl.constexpr, BLOCK_S: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    """One (row, head): sum_s acc_s e^(m_s - m) / sum_s l_s e^(m_s - m), m = max_s m_s, in the output dtype."""
    index = tl.program_id(0)  # row * q_heads + head: the partials' [B, q_heads] flattened
    s = tl.arange(0, BLOCK_S)
    d = tl.arange(0, BLOCK_D)
    s_ok = s < SPLITS
    m = tl.load(M + s * stride_s + index, mask=s_ok, other=-1.0e30)
    l_sum = tl.load(L + s * stride_s + index, mask=s_ok, other=0.0)
    acc = tl.load(PARTIAL + (s * stride_s + index)[:, None] * HEAD_DIM + d[None, :],
                  mask=s_ok[:, None] & (d < HEAD_DIM)[None, :], other=0.0)  # fmt: skip
    weight = tl.where(s_ok, tl.exp(m - tl.max(m, 0)), 0.0)
    out = tl.sum(acc * weight[:, None], 0) / tl.maximum(tl.sum(l_sum * weight, 0), 1.0e-30)
    row, head = index // q_heads, index % q_heads
    tl.store(OUT + row * stride_ob + head * stride_oh + d, out.to(OUT.dtype.element_ty), mask=d < HEAD_DIM)


@dataclass(frozen=True)
class NewToken:
    """The token a decode step adds to each row: K and V [B, kv_heads, d] (V None: key-only), in the compute
    dtype; the pool slot of the block that holds position seq_len - 1, and that block's column in the call's
    slot list ([B] each, int64: kvengine.attention.new_token_columns)."""

    k: torch.Tensor
    v: torch.Tensor | None
    slots: torch.Tensor
    columns: torch.Tensor


@dataclass(frozen=True)
class PagedLaunch:
    """How one call's grid and programs are shaped (bench/paged_kernel_sweep.py tries others on a GPU)."""

    block_t: int  # tokens per tile, a power of two >= 16 (tl.dot's least); tiles past a block are masked
    num_warps: int
    num_stages: int
    programs_per_sm: int  # split a row's tiles until rows x KV heads x splits reach this many per SM (0: never)
    v_with_k: bool = False  # load a tile's V beside its K (more bytes in flight, more registers: fewer programs)
    max_registers: int | None = None  # cap registers a thread (more programs an SM, or spills)
    # split rows: the split that finishes last merges the partials (a counter per row and KV head), instead of
    # a combine kernel after the paged one: one kernel less a layer, where a step is bound by kernel count
    last_split_merges: bool = False
    prefetch: bool = False  # load tile i + 1's K and V before tile i's math: two tiles in flight a program
    # a KV head's query heads over this many programs, each reading the KV (after the first, from L2): programs
    # to fill the GPU without splitting tokens, whose fp32 partials cost a write and a read each (at head_dim 512
    # and 16 query heads a split's partials are half the bytes of the KV it read); must divide the GQA group
    head_parts: int = 1
    # split partials' sums in the query's 16-bit dtype, not float32 (their max and sum stay float32): half the
    # bytes a split writes and the merge reads, for a rounding of each partial about that of the output's
    narrow_partials: bool = False
    # programmatic dependent launch, where can_launch_early: the kernel may be scheduled while the kernel before
    # it (the QKV GEMM) drains, and waits for it (griddepcontrol.wait) before its first load: the launch latency
    # hidden. Ignored elsewhere
    pdl: bool = False
    # the passed new token attended from registers after the tile loop and stored after it, instead of stored
    # first and read back with its tile behind a CTA barrier: the tile loads wait for no store. Off: the
    # folded step measured the same with it on an H100 (docs/PERF.md), for 100 more registers at d512
    token_in_registers: bool = False


@functools.cache
def _multiprocessors(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 1


def _next_power_of_two(value: int, *, at_least: int) -> int:
    return max(at_least, 1 << (value - 1).bit_length())


def default_launch(head_dim: int, tokens_per_block: int) -> PagedLaunch:
    """64-token tiles up to head_dim 128, 32 above (a [16, 512] fp32 accumulator already fills 64 registers
    a thread at 4 warps); enough programs to fill the GPU twice. Up to head_dim 128, at most 128 registers a
    thread: 4 programs an SM, and sm_90 compiles of the bandwidth cases' shapes spill nothing under that cap
    (bench/paged_kernel_registers.py); the d512 tile would spill under it (32 bytes), and takes 138, no cap: its
    three stages' 83 KB of shared memory hold it to 2 programs an SM anyway. 32-token tiles there took the
    DeepSeek-like step 2.5 % less time than 16-token ones on an H100.
    No head parts: they made every DeepSeek-like layer slower on an H100 (docs/PERF.md); not launched early
    (pdl): the step measured the same with it, within its noise."""
    block_d = _next_power_of_two(head_dim, at_least=16)
    block_t = min(_next_power_of_two(tokens_per_block, at_least=16), 64 if block_d <= 128 else 32)
    cap = 128 if block_d <= 128 else None
    return PagedLaunch(block_t=block_t, num_warps=4, num_stages=3, programs_per_sm=2, max_registers=cap)


def _unit_step(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` when its last dim is contiguous (the kernel steps it by one: the fused step's views are), else
    a contiguous copy."""
    return tensor if tensor.stride(-1) == 1 else tensor.contiguous()


def _register_cap(launch: PagedLaunch) -> dict[str, int]:
    """Triton's maxnreg launch option, when set and when this Triton's NVIDIA backend has it."""
    return {} if launch.max_registers is None or not _knows_option("maxnreg") else {"maxnreg": launch.max_registers}


@functools.cache
def _knows_option(name: str) -> bool:
    """This Triton's NVIDIA backend has the compile/launch option `name` (maxnreg, launch_pdl)."""
    try:
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:
        return False
    return name in {field.name for field in dataclasses.fields(CUDAOptions)}


@functools.cache
def can_launch_early(device: torch.device) -> bool:
    """PagedLaunch.pdl works here: an sm_90+ GPU (griddepcontrol is Hopper's), and a Triton with gdc_wait and
    the launch_pdl option."""
    if device.type != "cuda" or gdc_wait is None or torch.cuda.get_device_capability(device)[0] < 9:
        return False
    return _knows_option("launch_pdl")


def split_count(programs: int, n_tiles: int, *, multiprocessors: int, launch: PagedLaunch) -> tuple[int, int]:
    """(splits, tiles per split) for `programs` rows x KV heads over `n_tiles` tiles each."""
    wanted = -(-launch.programs_per_sm * multiprocessors // max(1, programs))
    per_split = -(-n_tiles // max(1, min(n_tiles, wanted)))
    return -(-n_tiles // per_split), per_split


def kernel_constexprs(
    launch: PagedLaunch,
    *,
    group: int,
    head_dim: int,
    tokens_per_block: int,
    splits: int,
    per_split: int,
    last_merges: bool,
    has_window: bool,
    key_only: bool,
    store_new: bool,
    norm_width: int | None,
    float32: bool,
    pdl: bool,
) -> dict[str, object]:
    """The paged kernel's constexprs for one call: `group` query heads a KV head, `splits` programs a row and
    KV head (`per_split` tiles each), the split arriving last merging or not, `norm_width` the hidden size of
    the rows whose norm the kernel folds in (None: no norm). One place for triton_paged_decode and for
    bench/paged_kernel_registers.py, which compiles the engine's calls for sm_90 without a GPU."""
    return {
        "GROUP": group, "BLOCK_G": _next_power_of_two(group // launch.head_parts, at_least=16), "HEAD_DIM": head_dim,
        "BLOCK_D": _next_power_of_two(head_dim, at_least=16), "TPB": tokens_per_block, "BLOCK_T": launch.block_t,
        "HAS_WINDOW": has_window, "SPLIT": splits > 1, "PRECISION": "ieee" if float32 else "tf32",
        "PER_SPLIT": per_split, "KEY_ONLY": key_only, "STORE_NEW": store_new, "V_WITH_K": launch.v_with_k,
        "LAST_MERGES": last_merges, "NORM_ROWS": norm_width is not None,
        # the norm's row width; the query's when there is none (unread then, and no recompile)
        "BLOCK_H": _next_power_of_two(norm_width or head_dim, at_least=16), "PREFETCH": launch.prefetch,
        "HEAD_PARTS": launch.head_parts, "PDL": pdl,
        "SPLITS": splits if last_merges else 1,  # constexprs of the merge only: no recompiles elsewhere
        "BLOCK_S": _next_power_of_two(splits, at_least=2) if last_merges else 1,
        "TOKEN_IN_REGISTERS": launch.token_in_registers and store_new,
    }  # fmt: skip


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
    new_token: NewToken | None = None,
    normed_rows: torch.Tensor | None = None,
    splits: int | None = None,
    launch: PagedLaunch | None = None,
    torch_combine: bool = False,
) -> torch.Tensor:
    """Attention of q [B, q_heads, d] over the pool blocks `slots` [B, n] (-1: skip), `logical` their logical
    block ids; the torch path's semantics (see kvengine.attention). `new_token`: stored at position
    seq_len - 1 first (None: the pool holds it already). `normed_rows` [B, hidden]: q and the new token are
    projections of these rows before their RMS norm, whose per-row factor the kernel applies (norm(x) @ W is
    x @ W times the factor). `splits` forces a split count; `torch_combine` merges splits with torch ops (as
    the step before the fused one did)."""
    batch, q_heads, head_dim = q.shape
    tpb, kv_heads = k_pool.shape[1], k_pool.shape[2]
    q, slots, logical = _unit_step(q), _unit_step(slots), _unit_step(logical)  # other strides are passed
    group = q_heads // kv_heads
    launch = launch or default_launch(head_dim, tpb)
    parts = launch.head_parts
    if parts < 1 or group % parts:
        raise ValueError(f"head_parts {parts} does not divide the {group} query heads of a KV head")
    n_tiles = slots.shape[1] * -(-tpb // launch.block_t)
    if splits is None:
        splits, per_split = split_count(batch * kv_heads * parts, n_tiles,
                                        multiprocessors=_multiprocessors(q.device), launch=launch)  # fmt: skip
    else:
        per_split = -(-n_tiles // max(1, min(n_tiles, splits)))
        splits = -(-n_tiles // per_split)
    out = torch.empty((batch, q_heads, head_dim), dtype=q.dtype, device=q.device)
    if splits > 1:
        narrow = launch.narrow_partials and q.dtype in (torch.bfloat16, torch.float16)
        partial = torch.empty((splits, batch, q_heads, head_dim), dtype=q.dtype if narrow else torch.float32,
                              device=q.device)  # fmt: skip
        m_out = torch.empty((splits, batch, q_heads), dtype=torch.float32, device=q.device)
        l_out = torch.empty_like(m_out)
        target, stride_ms, stride_mb = partial, batch * q_heads, q_heads
    else:
        target, m_out, l_out, stride_ms, stride_mb = out, out, out, 0, 0
    last_merges = splits > 1 and launch.last_split_merges and not torch_combine
    # unread unless merging
    arrived = _arrival_counters(q.device, batch * kv_heads * parts) if last_merges else seq_lens
    normed = q if normed_rows is None else _unit_step(normed_rows)  # unread unless passed
    new = new_token or NewToken(k_pool, None, seq_lens, seq_lens)  # unread when no token is passed
    k_new = _unit_step(new.k)
    v_new = k_new if new.v is None else _unit_step(new.v)  # V_NEW unread when the layer is key-only
    pdl = launch.pdl and can_launch_early(q.device)
    _paged_decode_kernel[(batch, kv_heads * parts, splits)](
        q, k_pool, v_pool, k_new, v_new, new.slots, new.columns, slots, logical, seq_lens, target, m_out, l_out,
        out, arrived, normed, normed.stride(0), normed.shape[-1], RMS_NORM_EPS,
        q.stride(0), q.stride(1), k_new.stride(0), k_new.stride(1), v_new.stride(0), v_new.stride(1),
        k_pool.stride(0), k_pool.stride(1), k_pool.stride(2), v_pool.stride(0), v_pool.stride(1), v_pool.stride(2),
        slots.stride(0), logical.stride(0), out.stride(0), out.stride(1), stride_ms, stride_mb,
        out.stride(0), out.stride(1), window_tokens or 0, sink_tokens, head_dim**-0.5, n_tiles, splits,
        **kernel_constexprs(
            launch, group=group, head_dim=head_dim, tokens_per_block=tpb, splits=splits, per_split=per_split,
            last_merges=last_merges, has_window=window_tokens is not None, key_only=v_pool is k_pool,
            store_new=new_token is not None, norm_width=normed_rows.shape[-1] if normed_rows is not None else None,
            float32=q.dtype == torch.float32, pdl=pdl,
        ),
        num_warps=launch.num_warps, num_stages=launch.num_stages, **_register_cap(launch),
        **({"launch_pdl": True} if pdl else {}),
    )  # fmt: skip
    if splits == 1 or last_merges:
        return out
    if torch_combine:
        return _combine(partial, m_out, l_out).to(q.dtype)
    _combine_kernel[(batch * q_heads,)](
        partial, m_out, l_out, out, stride_ms, out.stride(0), out.stride(1), q_heads,
        SPLITS=splits, BLOCK_S=_next_power_of_two(splits, at_least=2), HEAD_DIM=head_dim,
        BLOCK_D=_next_power_of_two(head_dim, at_least=16),
    )  # fmt: skip
    return out


_COUNTERS: dict[torch.device, torch.Tensor] = {}


def _arrival_counters(device: torch.device, count: int) -> torch.Tensor:
    """`count` int32 counters at zero, for the splits of each row and KV head to count their arrival. The last
    split of each zeroes its counter again, so one buffer a device serves every call after it, on one stream
    and in graph replays alike. Grown outside a graph capture: one made during a capture would live in the
    graph's memory pool."""
    counters = _COUNTERS.get(device)
    if counters is None or counters.numel() < count:
        if device.type == "cuda" and torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"the paged kernel's {count} split counters were not allocated before the capture")
        counters = torch.zeros(max(count, 4096), dtype=torch.int32, device=device)
        _COUNTERS[device] = counters
    return counters


def _combine(partial: torch.Tensor, m: torch.Tensor, l_sum: torch.Tensor) -> torch.Tensor:
    """Merge split-wise online-softmax partials in torch ops (about ten kernels): the combine kernel's math."""
    top = m.max(dim=0).values
    weight = torch.exp(m - top)
    return (partial * weight[..., None]).sum(0) / (l_sum * weight).sum(0).clamp_min(1e-30)[..., None]
