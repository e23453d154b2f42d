"""Block pool tensors: one tensor per pool, [num_buffers, num_slots, tokens_per_block, kv_heads, head_dim].

Buffer-major: a layer's key (or value) buffer is one contiguous [num_slots, ...] tensor, so the blocks one
layer's attention reads lie in that layer's own span of memory. Slot-major ([num_slots, num_buffers, ...],
every layer of a slot side by side) put one layer's blocks a whole slot row apart (6.5 MB for the Gemma-like
window pool's 100 buffers), each block on a GPU page of its own: a layer's call touched thousands of pages.
On an H100 the Gemma-like b128 decode step took 15.0 ms that way and 12.4 ms buffer-major (docs/PERF.md,
"The step's memory layouts"). The bytes, and what a slot is (one index into every pool tensor of its group),
are the same either way.

This module and the attention/graph modules are the only ones that touch torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from kvengine.lifecycle import CacheLayout

TORCH_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "fp8_e4m3": torch.float8_e4m3fn,
}


class KvPools:
    """The memory behind the free lists: a slot id is a row of every pool tensor in its group."""

    def __init__(self, layout: CacheLayout, num_slots: Sequence[int], *, device: torch.device) -> None:
        self.layout = layout
        self.tensors: list[list[torch.Tensor]] = [
            [
                torch.zeros(
                    (pool.num_buffers, num_slots[group.group_id], layout.tokens_per_block,
                     pool.buffer.num_kv_heads, pool.buffer.head_dim),
                    dtype=TORCH_DTYPES[pool.buffer.dtype],
                    device=device,
                )
                for pool in group.pools
            ]
            for group in layout.groups
        ]

    def layer_kv(self, layer_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Views [num_slots, tokens_per_block, kv_heads, head_dim] of a layer's key and value buffers.

        Key-only layers return the key view twice (the latent serves as value too).
        """
        placement = self.layout.placements[layer_id]
        pool = self.tensors[placement.group_id][placement.pool_index]
        key = pool[placement.key_buffer]
        value = key if placement.value_buffer is None else pool[placement.value_buffer]
        return key, value

    def total_bytes(self) -> int:
        return sum(t.numel() * t.element_size() for group in self.tensors for t in group)
