"""Sizing managers: turn runtime limits and the config into a typical step, constraints or a pool ratio.

One registry (`MANAGERS`) maps the `manager:` name of a model spec to its class.

Generic: typical step and the context constraint only when `avg_seq_len` is given (and no pool ratio);
otherwise the allocator fallback decides. No long-decode warmup constraint.
DeepSeek-V4: the typical length defaults to max_seq_len, and a warmup constraint is added:

    [ (max_seq_len, max_seq_len - 1) ] + [ (1 + max_draft_len + num_extra_kv_tokens, 0) ] * (n - 1)
    n = min(max_batch_size, largest CUDA-graph batch size)     (omitted when n == 0: graphs disabled)
"""

from __future__ import annotations

from kvengine.config import KvCacheConfig
from kvengine.errors import ConfigError
from kvengine.slots import BatchDesc, KvCacheDesc, SizingInputs
from kvengine.spec import RuntimeLimits


class GenericManager:
    """Constraints for ordinary models: nothing unless the user states an average length."""

    name = "generic"

    def typical_seq_len(self, limits: RuntimeLimits, config: KvCacheConfig) -> int | None:
        return config.avg_seq_len

    def sizing_inputs(
        self, limits: RuntimeLimits, config: KvCacheConfig, *, max_cuda_graph_batch_size: int
    ) -> SizingInputs:
        if config.avg_seq_len is not None and config.avg_seq_len > limits.max_seq_len:
            raise ConfigError(
                f"avg_seq_len must be <= max_seq_len {limits.max_seq_len}, found {config.avg_seq_len}.",
                hint="lower --avg-seq-len or leave it unset for the allocator fallback",
            )
        if config.pool_ratio is not None:
            return SizingInputs(pool_ratio=config.pool_ratio)
        length = self.typical_seq_len(limits, config)
        if length is None:
            return SizingInputs()
        constraints = self.warmup_constraints(limits, max_cuda_graph_batch_size=max_cuda_graph_batch_size)
        return SizingInputs(typical_step=typical_step(limits, length), constraints=constraints)

    def warmup_constraints(self, limits: RuntimeLimits, *, max_cuda_graph_batch_size: int) -> tuple[BatchDesc, ...]:
        return context_constraints(limits)


class DeepSeekV4Manager(GenericManager):
    """Keeps the max-length model: typical length defaults to max_seq_len; adds the decode warmup floor."""

    name = "deepseek-v4"

    def typical_seq_len(self, limits: RuntimeLimits, config: KvCacheConfig) -> int | None:
        return config.avg_seq_len if config.avg_seq_len is not None else limits.max_seq_len

    def warmup_constraints(self, limits: RuntimeLimits, *, max_cuda_graph_batch_size: int) -> tuple[BatchDesc, ...]:
        n = min(limits.max_batch_size, max_cuda_graph_batch_size)
        if n <= 0:
            return context_constraints(limits)
        tiny = 1 + limits.max_draft_len + limits.num_extra_kv_tokens
        decode = (KvCacheDesc(limits.max_seq_len, limits.max_seq_len - 1),) + (KvCacheDesc(tiny, 0),) * (n - 1)
        return (decode, *context_constraints(limits))


MANAGERS: dict[str, GenericManager] = {m.name: m for m in (GenericManager(), DeepSeekV4Manager())}


def typical_step(limits: RuntimeLimits, length: int) -> BatchDesc:
    """One prefill chunk plus (max_batch_size - 1) decodes of `length` tokens."""
    chunk = (limits.max_num_tokens if limits.max_num_tokens is not None else length) + limits.num_extra_kv_tokens
    history = max(0, length - limits.max_draft_len - 1)
    return (KvCacheDesc(chunk, 0),) + (KvCacheDesc(length, history),) * (limits.max_batch_size - 1)


def context_constraints(limits: RuntimeLimits) -> tuple[BatchDesc, ...]:
    """One fresh request at the per-iteration token budget (chunked prefill must always fit)."""
    if limits.max_num_tokens is None:
        return ()
    return ((KvCacheDesc(limits.max_num_tokens + limits.num_extra_kv_tokens, 0),),)
