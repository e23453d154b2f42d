"""The byte side of sizing: allocation grains, bytes per slot count, and the quota from the config (pure)."""

from __future__ import annotations

import math

from kvengine.config import KvCacheConfig
from kvengine.errors import ConfigError
from kvengine.lifecycle import CacheLayout, ceil_div
from kvengine.spec import RuntimeLimits

MIB = 1 << 20
GIB = 1 << 30


def gpu_grain_bytes(quota_bytes: int) -> int:
    """GPU allocation grain: 2 MiB below 2 GiB of quota, doubling per power of two up to 32 MiB."""
    if quota_bytes < 2 * GIB:
        return 2 * MIB
    return (2 * MIB) << min(4, int(math.log2(quota_bytes / GIB)))


def group_grains(layout: CacheLayout, group_id: int, num_slots: int, grain_bytes: int) -> int:
    """Grains a pool group of `num_slots` slots occupies (each pool rounds up to whole grains)."""
    tpb = layout.tokens_per_block
    return sum(ceil_div(num_slots * pool.slot_bytes(tpb), grain_bytes) for pool in layout.groups[group_id].pools)


def slots_in_grains(layout: CacheLayout, group_id: int, grains: int, grain_bytes: int) -> int:
    """The most slots a pool group can hold within `grains` grains."""
    slots = grains * grain_bytes // layout.slot_bytes(group_id)
    while slots > 0 and group_grains(layout, group_id, slots, grain_bytes) > grains:
        slots -= 1
    return slots


def format_bytes(num_bytes: int) -> str:
    """`2.50 GiB (2684354560 bytes)`; MiB below a GiB; plain bytes below a MiB."""
    if num_bytes >= GIB:
        return f"{num_bytes / GIB:.2f} GiB ({num_bytes} bytes)"
    if num_bytes >= MIB:
        return f"{num_bytes / MIB:.2f} MiB ({num_bytes} bytes)"
    return f"{num_bytes} bytes"


def quota_from_max_tokens(layout: CacheLayout, limits: RuntimeLimits, max_tokens: int) -> int:
    """Bytes that hold `max_tokens` tokens: full layers per token, a prefill chunk and one window per request.

        quota(T) = T * full_bytes_per_token + min(T, max_num_tokens) * swa_bytes_per_token
                   + max_batch_size * swa_window_bytes
    """
    tpb = layout.tokens_per_block
    full_per_token = swa_per_token = swa_per_request = 0
    for lc_id, cycle in enumerate(layout.life_cycles):
        per_token = layout.slot_bytes(layout.group_of(lc_id)) // tpb
        if cycle.window_tokens is None:
            full_per_token += per_token
        else:
            swa_per_token += per_token
            swa_per_request += ceil_div(cycle.window_tokens, tpb) * tpb * per_token
    chunk = min(max_tokens, limits.max_num_tokens or max_tokens)
    return max_tokens * full_per_token + chunk * swa_per_token + limits.max_batch_size * swa_per_request


def resolve_quota_bytes(
    config: KvCacheConfig, layout: CacheLayout, limits: RuntimeLimits, *, free_gpu_bytes: int | None
) -> int:
    """The byte budget of all pools.

    With `free_gpu_bytes` (a real device): that times free_gpu_memory_fraction, capped by
    max_gpu_total_bytes when set. Without (planning): max_gpu_total_bytes itself. max_tokens caps both.
    """
    if free_gpu_bytes is None:
        if config.max_gpu_total_bytes <= 0:
            raise ConfigError(
                "planning without a device needs a budget, found max_gpu_total_bytes 0.",
                hint="pass --budget-gib or set max_gpu_total_bytes",
            )
        quota = config.max_gpu_total_bytes
    else:
        quota = int(free_gpu_bytes * config.free_gpu_memory_fraction)
        if config.max_gpu_total_bytes > 0:
            quota = min(quota, config.max_gpu_total_bytes)
    if config.max_tokens is not None:
        by_tokens = quota_from_max_tokens(layout, limits, config.max_tokens)
        quota = min(quota, math.ceil(by_tokens / config.max_util_for_resume))
    return quota
