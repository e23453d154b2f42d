"""CUDA-graph warmup bookkeeping: which batch sizes get graphs, and the dummies that make them possible.

Per capture size bs (largest first): bs - 1 short generation dummies (token_num 1) plus one long dummy
sized by `get_num_available_tokens`, so the graph sees worst-case block tables. A size whose dummies do
not fit is skipped with one warning and recorded; dummies are always released. The torch side passes a
`capture` callback; this module itself needs no GPU.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kvengine.dummies import (
    DummyAccounting,
    DummyShortage,
    add_dummy_requests,
    get_num_available_tokens,
    release_dummies,
)
from kvengine.errors import ConfigError
from kvengine.request import KvCache
from kvengine.storage import KvStorage

LOG = logging.getLogger("kvengine")

CaptureFn = Callable[[int, list[KvCache]], None]


def default_capture_sizes(max_batch_size: int) -> tuple[int, ...]:
    """Powers of two below max_batch_size, plus max_batch_size itself (so every batch can pad)."""
    sizes = []
    size = 1
    while size < max_batch_size:
        sizes.append(size)
        size *= 2
    return (*sizes, max_batch_size)


def capture_sizes(configured: Sequence[int] | None, *, max_batch_size: int) -> tuple[int, ...]:
    """The sizes to capture, ascending: configured ones (at most max_batch_size) or the default."""
    if configured is None:
        return default_capture_sizes(max_batch_size)
    kept = tuple(sorted({s for s in configured if s <= max_batch_size}))
    if not kept:
        raise ConfigError(
            f"no CUDA-graph batch size <= max_batch_size {max_batch_size}, found {sorted(configured)!r}.",
            hint="list sizes up to max_batch_size or leave cuda_graph_batch_sizes unset",
        )
    return kept


@dataclass(frozen=True)
class SkippedSize:
    batch_size: int
    reason: str


@dataclass(frozen=True)
class WarmupResult:
    """Requested and captured sizes (ascending) and why the others were skipped."""

    requested_sizes: tuple[int, ...]
    captured_sizes: tuple[int, ...]
    skipped: tuple[SkippedSize, ...]

    @property
    def skipped_sizes(self) -> tuple[int, ...]:
        return tuple(sorted(s.batch_size for s in self.skipped))

    @property
    def coverage(self) -> float:
        """Captured / requested sizes (1.0 when nothing was requested)."""
        return len(self.captured_sizes) / len(self.requested_sizes) if self.requested_sizes else 1.0


def run_warmup(
    storage: KvStorage,
    *,
    sizes: Sequence[int],
    max_seq_len: int,
    accounting: DummyAccounting,
    capture: CaptureFn | None = None,
) -> WarmupResult:
    """Warm up every size, largest first; `capture(bs, dummies)` runs while the dummies are held."""
    captured, skipped = [], []
    for batch_size in sorted(sizes, reverse=True):
        dummies = _warmup_batch(storage, batch_size, max_seq_len=max_seq_len, accounting=accounting)
        if isinstance(dummies, str):
            LOG.warning("Skipping CUDA graph warmup for batch size %d: %s", batch_size, dummies)
            skipped.append(SkippedSize(batch_size, dummies))
            continue
        try:
            if capture is not None:
                capture(batch_size, dummies)
        finally:
            release_dummies(dummies)
        captured.append(batch_size)
    return WarmupResult(tuple(sorted(sizes)), tuple(sorted(captured)), tuple(skipped))


def _warmup_batch(
    storage: KvStorage, batch_size: int, *, max_seq_len: int, accounting: DummyAccounting
) -> list[KvCache] | str:
    """The long dummy first, then bs - 1 short ones; or the reason they do not fit (nothing held)."""
    short = add_dummy_requests(storage, [1] * (batch_size - 1), is_gen=True, accounting=accounting)
    if isinstance(short, DummyShortage):
        return "not enough KV cache space for the short dummies (" + short.describe(storage) + ")"
    overhead = accounting.num_extra_kv_tokens + accounting.num_draft_tokens
    long_tokens = get_num_available_tokens(
        storage, upper_tokens=max_seq_len - overhead, is_gen=True, accounting=accounting
    )
    if long_tokens < 1:
        free = ", ".join(f"group {g}: {n}" for g, n in enumerate(storage.num_free_slots()))
        release_dummies(short)
        return f"not enough KV cache space for the long dummy (free slots {free} after {batch_size - 1} short dummies)"
    long = add_dummy_requests(storage, [long_tokens], is_gen=True, accounting=accounting)
    if isinstance(long, DummyShortage):  # cannot happen while dummy_shape is the one accounting
        release_dummies(short)
        return "not enough KV cache space for the long dummy (" + long.describe(storage) + ")"
    return long + short
