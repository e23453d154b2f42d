"""CUDA-graph padding at run time: pad a batch up to the next captured size, or run eager and count it.

One persistent padding dummy (token_num 1, generation) is pre-allocated right after warmup, while the
cache is still empty, and only when padding can occur at all. Eager steps are counted by reason so that
coverage problems show up as metrics, not only as log lines.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kvengine.dummies import DummyAccounting, DummyShortage, add_dummy_requests
from kvengine.request import KvCache
from kvengine.storage import KvStorage

LOG = logging.getLogger("kvengine")

EAGER_NO_GRAPH = "no captured size >= batch"
EAGER_NO_PADDING_DUMMY = "no padding dummy"
EAGER_DISABLED = "graphs disabled"


def padding_can_occur(captured_sizes: Sequence[int]) -> bool:
    """True when some batch size up to the largest captured one is not itself captured."""
    return bool(captured_sizes) and len(set(captured_sizes)) < max(captured_sizes)


def preallocate_padding_dummy(
    storage: KvStorage, *, captured_sizes: Sequence[int], accounting: DummyAccounting
) -> KvCache | None:
    """The persistent padding dummy, or None when padding cannot occur or it does not fit (warned once)."""
    if not padding_can_occur(captured_sizes):
        return None
    made = add_dummy_requests(storage, [1], is_gen=True, accounting=accounting)
    if isinstance(made, DummyShortage):
        LOG.warning(
            "CUDA-graph padding dummy could not be allocated (%s); padded batches fall back to eager mode",
            made.describe(storage),
        )
        return None
    return made[0]


@dataclass(frozen=True)
class StepRoute:
    """How one decode step runs: graph of `graph_size` with `padding` dummy rows, or eager."""

    batch_size: int
    graph_size: int | None
    padding: int
    eager_reason: str | None = None


@dataclass(frozen=True)
class RouteMetrics:
    graph_steps: int
    eager_steps: int
    padded_steps: int
    eager_reasons: dict[str, int]


class DecodeRouter:
    """Routes each step and counts graph, eager and padded steps."""

    def __init__(self, captured_sizes: Sequence[int], *, padding_dummy: KvCache | None, enabled: bool = True):
        self.captured_sizes = tuple(sorted(captured_sizes))
        self.padding_dummy = padding_dummy
        self.enabled = enabled
        self._graph = self._eager = self._padded = 0
        self._reasons: Counter[str] = Counter()

    def route(self, batch_size: int) -> StepRoute:
        route = self._decide(batch_size)
        if route.graph_size is None:
            self._eager += 1
            self._reasons[route.eager_reason or ""] += 1
        else:
            self._graph += 1
            self._padded += route.padding > 0
        return route

    def metrics(self) -> RouteMetrics:
        return RouteMetrics(self._graph, self._eager, self._padded, dict(self._reasons))

    def _decide(self, batch_size: int) -> StepRoute:
        if not self.enabled:
            return StepRoute(batch_size, None, 0, EAGER_DISABLED)
        size = next((s for s in self.captured_sizes if s >= batch_size), None)
        if size is None:
            return StepRoute(batch_size, None, 0, EAGER_NO_GRAPH)
        if size > batch_size and self.padding_dummy is None:
            return StepRoute(batch_size, None, 0, EAGER_NO_PADDING_DUMMY)
        return StepRoute(batch_size, size, size - batch_size)
