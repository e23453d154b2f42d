"""Model specs: per-layer KV geometry plus the runtime limits a deployment runs with (pure values).

A spec is validated once by `kvengine.loader` and travels as frozen dataclasses from there on.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvengine.errors import ConfigError

# Bytes per element of each KV dtype; the one registry the loader, sizing and torch modules read.
DTYPE_BYTES: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8_e4m3": 1}


@dataclass(frozen=True)
class LayerSpec:
    """One attention layer's KV cache: heads, head size, dtype and window (None = full attention)."""

    num_kv_heads: int
    head_dim: int
    dtype: str
    window_tokens: int | None = None
    sink_tokens: int = 0
    key_only: bool = False  # MLA / DeepSeek-style caches keep one latent buffer; attention uses it as V too
    num_q_heads: int | None = None  # None = num_kv_heads (no grouped-query attention)

    @property
    def roles(self) -> tuple[str, ...]:
        return ("key",) if self.key_only else ("key", "value")

    @property
    def q_heads(self) -> int:
        return self.num_q_heads if self.num_q_heads is not None else self.num_kv_heads

    @property
    def group(self) -> int:
        """Query heads a KV head serves (GQA's group; 1 without grouping)."""
        return self.q_heads // self.num_kv_heads

    def buffer_bytes_per_token(self) -> int:
        """Bytes one token occupies in ONE buffer (key or value) of this layer."""
        return self.num_kv_heads * self.head_dim * DTYPE_BYTES[self.dtype]

    def bytes_per_token(self) -> int:
        """Bytes one token occupies in this layer, all buffers together."""
        return len(self.roles) * self.buffer_bytes_per_token()


@dataclass(frozen=True)
class RuntimeLimits:
    """What the serving runtime promises the cache: lengths, batch, token budget, draft and extras."""

    max_seq_len: int
    max_batch_size: int
    max_num_tokens: int | None = None
    max_draft_len: int = 0
    num_extra_kv_tokens: int = 0
    cuda_graph_batch_sizes: tuple[int, ...] | None = None  # None = powers of two up to max_batch_size

    def __post_init__(self) -> None:
        _require_positive("max_seq_len", self.max_seq_len)
        _require_positive("max_batch_size", self.max_batch_size)
        if self.max_num_tokens is not None:
            _require_positive("max_num_tokens", self.max_num_tokens)
        if self.max_draft_len < 0 or self.num_extra_kv_tokens < 0:
            raise ConfigError(
                f"max_draft_len and num_extra_kv_tokens must be >= 0, found {self.max_draft_len!r} "
                f"and {self.num_extra_kv_tokens!r}.",
                hint="set them to 0 when the model has no draft or extra KV tokens",
            )
        for size in self.cuda_graph_batch_sizes or ():
            _require_positive("cuda_graph_batch_sizes entries", size)


@dataclass(frozen=True)
class ModelSpec:
    """A named model: its layers, the sizing manager kind, runtime limits and the block size it prefers."""

    name: str
    manager: str
    layers: tuple[LayerSpec, ...]
    runtime: RuntimeLimits
    tokens_per_block: int = 32


def effective_windows(
    layers: tuple[LayerSpec, ...], *, max_seq_len: int, window_pattern: tuple[int | None, ...] | None
) -> tuple[int | None, ...]:
    """Each layer's attention window after the optional pattern override and the max_seq_len clamp.

    The pattern repeats over the layers; a window that covers max_seq_len is full attention (None).
    """
    windows = []
    for index, layer in enumerate(layers):
        window = window_pattern[index % len(window_pattern)] if window_pattern else layer.window_tokens
        windows.append(None if window is None or window >= max_seq_len else window)
    return tuple(windows)


def _require_positive(name: str, value: int) -> None:
    if value < 1:
        raise ConfigError(f"{name} must be a positive integer, found {value!r}.", hint=f"set {name} >= 1")
