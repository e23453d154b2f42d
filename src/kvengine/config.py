"""KvCacheConfig: the user's knobs for block size, windows, pool split and memory budget (pure value)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvengine.errors import ConfigError


@dataclass(frozen=True)
class KvCacheConfig:
    """Knobs of the KV cache; defaults keep the allocator-fallback split (see `kvengine.sizing`).

    `avg_seq_len` and `pool_ratio` are None by default on purpose: a generic model's typical length must
    not default to max_seq_len (that starved the sliding-window pool of a Gemma-like model).
    """

    tokens_per_block: int = 32
    window_pattern: tuple[int | None, ...] | None = None  # repeated over layers; None = the spec's windows
    avg_seq_len: int | None = None
    pool_ratio: tuple[float, ...] | None = None  # one weight per life cycle, in first-seen order
    free_gpu_memory_fraction: float = 0.9
    max_gpu_total_bytes: int = 0  # 0 = no cap
    max_tokens: int | None = None
    max_util_for_resume: float = 0.95
    grain_bytes: int | None = None  # None = the GPU rule (2 MiB .. 32 MiB by quota); 1 = no grain

    def __post_init__(self) -> None:
        if self.tokens_per_block < 1 or self.tokens_per_block & (self.tokens_per_block - 1):
            raise ConfigError(
                f"tokens_per_block must be a power of two, found {self.tokens_per_block!r}.",
                hint="use 16, 32, 64 or 128",
            )
        for window in self.window_pattern or ():
            if window is not None and window < 1:
                raise ConfigError(
                    f"window_pattern entries must be >= 1 or None, found {window!r}.",
                    hint="use None for full attention",
                )
        if self.avg_seq_len is not None and self.avg_seq_len < 1:
            raise ConfigError(f"avg_seq_len must be >= 1, found {self.avg_seq_len!r}.", hint="leave it unset")
        self._check_pool_ratio()
        if not 0.0 < self.free_gpu_memory_fraction <= 1.0:
            raise ConfigError(
                f"free_gpu_memory_fraction must be in (0, 1], found {self.free_gpu_memory_fraction!r}.",
                hint="0.9 keeps 10 % of free memory for activations",
            )
        if self.max_gpu_total_bytes < 0:
            raise ConfigError(
                f"max_gpu_total_bytes must be >= 0, found {self.max_gpu_total_bytes!r}.", hint="0 = no cap"
            )
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, found {self.max_tokens!r}.", hint="leave it unset")
        if not 0.0 < self.max_util_for_resume <= 1.0:
            raise ConfigError(
                f"max_util_for_resume must be in (0, 1], found {self.max_util_for_resume!r}.",
                hint="0.95 is the default headroom",
            )
        if self.grain_bytes is not None and self.grain_bytes < 1:
            raise ConfigError(
                f"grain_bytes must be >= 1, found {self.grain_bytes!r}.", hint="leave it unset for the GPU rule"
            )

    def _check_pool_ratio(self) -> None:
        if self.pool_ratio is None:
            return
        if not self.pool_ratio or any(not w > 0 for w in self.pool_ratio):
            raise ConfigError(
                f"pool_ratio weights must all be > 0, found {list(self.pool_ratio)!r}.",
                hint="give one positive weight per life cycle, summing to 1",
            )
        if not math.isclose(sum(self.pool_ratio), 1.0, abs_tol=1e-6):
            raise ConfigError(
                f"pool_ratio must sum to 1, found sum {sum(self.pool_ratio):.6g} for {list(self.pool_ratio)!r}.",
                hint="normalize the weights",
            )
