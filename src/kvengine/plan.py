"""Plan a deployment without a GPU: layout, budget split, largest request, and which graphs warm up.

Pure bookkeeping end to end: the warmup is simulated on block free lists, no tensors are made.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kvengine.config import KvCacheConfig
from kvengine.dummies import DummyAccounting, get_num_available_tokens
from kvengine.lifecycle import CacheLayout, build_layout
from kvengine.manager import MANAGERS
from kvengine.padding import padding_can_occur, preallocate_padding_dummy
from kvengine.quota import gpu_grain_bytes, resolve_quota_bytes
from kvengine.sizing import PoolPlan, split_budget
from kvengine.slots import SizingInputs
from kvengine.spec import ModelSpec, RuntimeLimits, effective_windows
from kvengine.storage import KvStorage
from kvengine.warmup import WarmupResult, capture_sizes, run_warmup


@dataclass(frozen=True)
class Sizing:
    """Everything decided before memory exists: layout, sizing inputs and the split."""

    limits: RuntimeLimits
    layout: CacheLayout
    inputs: SizingInputs
    pools: PoolPlan
    capture_sizes: tuple[int, ...]
    accounting: DummyAccounting


@dataclass(frozen=True)
class Plan:
    """A sizing plus what the warmup would do with it."""

    spec: ModelSpec
    config: KvCacheConfig
    sizing: Sizing
    largest_request_tokens: int
    warmup: WarmupResult
    padding_dummy_ok: bool


def size_pools(
    spec: ModelSpec, config: KvCacheConfig, *, free_gpu_bytes: int | None, limits: RuntimeLimits | None = None
) -> Sizing:
    """Layout and split for `spec`; `free_gpu_bytes` None means 'plan with max_gpu_total_bytes'."""
    limits = limits or spec.runtime
    windows = effective_windows(spec.layers, max_seq_len=limits.max_seq_len, window_pattern=config.window_pattern)
    layout = build_layout(spec.layers, windows, tokens_per_block=config.tokens_per_block)
    sizes = capture_sizes(limits.cuda_graph_batch_sizes, max_batch_size=limits.max_batch_size)
    inputs = MANAGERS[spec.manager].sizing_inputs(limits, config, max_cuda_graph_batch_size=max(sizes))
    quota = resolve_quota_bytes(config, layout, limits, free_gpu_bytes=free_gpu_bytes)
    grain = config.grain_bytes if config.grain_bytes is not None else gpu_grain_bytes(quota)
    pools = split_budget(
        layout, inputs, quota_bytes=quota, grain_bytes=grain, max_util_for_resume=config.max_util_for_resume
    )
    accounting = DummyAccounting(limits.num_extra_kv_tokens, limits.max_draft_len)
    return Sizing(limits, layout, inputs, pools, sizes, accounting)


def make_plan(
    spec: ModelSpec, config: KvCacheConfig, *, budget_bytes: int, limits: RuntimeLimits | None = None
) -> Plan:
    """Size the pools for `budget_bytes`, then simulate warmup and padding on empty free lists."""
    config = dataclasses.replace(config, max_gpu_total_bytes=budget_bytes)
    sizing = size_pools(spec, config, free_gpu_bytes=None, limits=limits)
    storage = KvStorage(sizing.layout, sizing.pools.num_slots)
    overhead = sizing.accounting.num_extra_kv_tokens + sizing.accounting.num_draft_tokens
    largest = get_num_available_tokens(
        storage, upper_tokens=sizing.limits.max_seq_len - overhead, is_gen=True, accounting=sizing.accounting
    )
    warmup = run_warmup(
        storage, sizes=sizing.capture_sizes, max_seq_len=sizing.limits.max_seq_len, accounting=sizing.accounting
    )
    dummy = preallocate_padding_dummy(storage, captured_sizes=warmup.captured_sizes, accounting=sizing.accounting)
    padding_ok = dummy is not None or not padding_can_occur(warmup.captured_sizes)
    return Plan(spec, config, sizing, largest, warmup, padding_ok)
