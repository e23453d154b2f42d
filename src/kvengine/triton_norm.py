"""The decoder's RMS norm as one Triton kernel: one program a row, where the torch expression is seven kernels.

Same math as kvengine.model.rms_norm: the mean of squares in float32, its reciprocal square root cast to the
activations' dtype, times the row. `TRITON_INTERPRET=1` runs it on CPU tensors.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kvengine.model import RMS_NORM_EPS


@triton.jit
def rms_factor(x, n_cols, eps):  # type: ignore[no-untyped-def]
    """One row's norm factor (x masked to zeros past n_cols): 1 / sqrt(mean of squares + eps) in float32, cast
    to the row's dtype as the torch expression casts it. The paged kernel's folded step applies it too."""
    wide = x.to(tl.float32)
    return (1.0 / tl.sqrt(tl.sum(wide * wide, 0) / n_cols + eps)).to(x.dtype)


@triton.jit
def _rms_norm_kernel(X, OUT, stride_x, stride_o, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    ok = cols < n_cols
    x = tl.load(X + row * stride_x + cols, mask=ok, other=0.0)
    tl.store(OUT + row * stride_o + cols, x * rms_factor(x, n_cols, eps), mask=ok)


def triton_rms_norm(x: torch.Tensor) -> torch.Tensor:
    """x [rows, hidden] (last dim contiguous) normalized per row, in x's dtype."""
    rows, hidden = x.shape
    out = torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
    block = triton.next_power_of_2(hidden)
    _rms_norm_kernel[(rows,)](x, out, x.stride(0), out.stride(0), hidden, RMS_NORM_EPS, BLOCK=block,
                              num_warps=4 if block <= 2048 else 8)  # fmt: skip
    return out
