"""DecodeEngine: sizing -> pools -> model -> warmup (graph capture) -> padded decode steps, with metrics.

The bookkeeping (free lists, dummies, routing) is the pure modules'; this one stages tensors.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from dataclasses import dataclass

import torch

from kvengine.config import KvCacheConfig
from kvengine.errors import ConfigError
from kvengine.graphs import GraphRunner
from kvengine.memory import TORCH_DTYPES, KvPools
from kvengine.model import DecodeInputs, TinyDecoder
from kvengine.padding import DecodeRouter, preallocate_padding_dummy
from kvengine.plan import Sizing, size_pools
from kvengine.request import KvCache
from kvengine.spec import ModelSpec
from kvengine.step_cost import ExtraStepCost, check_fraction, extra_step_cost_from_env, plan_extra_cost
from kvengine.storage import KvStorage
from kvengine.warmup import WarmupResult, run_warmup

LOG = logging.getLogger("kvengine")


@dataclass(frozen=True)
class EngineOptions:
    device: str = "cpu"
    max_context_tokens: int | None = None  # block-table width of the decode step; None = max_seq_len
    budget_bytes: int | None = None  # None = free device memory x free_gpu_memory_fraction
    use_cuda_graphs: bool = True  # real graphs on CUDA; on CPU the same padded static-batch path runs
    hidden_size: int = 256
    compute_dtype: str | None = None  # activations and weights; None = the KV dtype (float32 for fp8 KV)
    vocab_size: int = 512
    seed: int = 0
    # a planted slowdown: this fraction of the layers runs twice per step (kvengine.step_cost);
    # None = $KVENGINE_EXTRA_STEP_COST, off when unset
    extra_step_cost: float | None = None


@dataclass(frozen=True)
class EngineMetrics:
    """What the engine reports: capture coverage and how decode steps ran."""

    requested_capture_sizes: tuple[int, ...]
    captured_sizes: tuple[int, ...]
    skipped_capture_sizes: tuple[int, ...]
    capture_coverage: float
    graph_steps: int
    eager_steps: int
    padded_steps: int
    eager_reasons: dict[str, int]


@dataclass
class Sequence:
    """A running request: its cache and how many tokens its KV holds."""

    cache: KvCache
    length_tokens: int


class DecodeEngine:
    def __init__(self, spec: ModelSpec, config: KvCacheConfig, options: EngineOptions) -> None:
        self.device = torch.device(options.device)
        limits = spec.runtime
        self.max_context_tokens = options.max_context_tokens or limits.max_seq_len
        if self.max_context_tokens > limits.max_seq_len:
            raise ConfigError(
                f"max_context_tokens must be <= max_seq_len {limits.max_seq_len}, found {self.max_context_tokens}.",
                hint="lower max_context_tokens",
            )
        self.sizing: Sizing = self._size(spec, config, options)
        self.extra_cost: ExtraStepCost = self._plan_extra_cost(spec, options)  # checked before any allocation
        layout = self.sizing.layout
        self.storage = KvStorage(layout, self.sizing.pools.num_slots)
        self.pools = KvPools(layout, self.sizing.pools.num_slots, device=self.device)
        dtype = TORCH_DTYPES[spec.layers[0].dtype]
        compute = torch.float32 if dtype == torch.float8_e4m3fn else dtype
        if options.compute_dtype is not None:
            compute = TORCH_DTYPES[options.compute_dtype]
        self.model = TinyDecoder(spec.layers, layout, hidden_size=options.hidden_size,
                                 vocab_size=options.vocab_size, dtype=compute, device=self.device, seed=options.seed,
                                 repeated_layers=self.extra_cost.repeated_layers)  # fmt: skip
        self.max_blocks = -(-self.max_context_tokens // layout.tokens_per_block)
        rows = max(max(self.sizing.capture_sizes), limits.max_batch_size)
        self._host_tables = [torch.full((rows, self.max_blocks), -1, dtype=torch.int64) for _ in layout.life_cycles]
        self._row_owner: list[tuple[int, int] | None] = [None] * rows
        self.static = DecodeInputs(
            torch.zeros(rows, dtype=torch.int64, device=self.device),
            torch.zeros(rows, dtype=torch.int64, device=self.device),
            tuple(t.to(self.device) for t in self._host_tables),
        )
        cuda_graphs = options.use_cuda_graphs and self.device.type == "cuda"
        # the model and the pools, not the engine: a runner referring back to the engine would make a cycle,
        # and a dropped engine's pools would wait for the collector (the next engine's build could run out)
        self.runner = GraphRunner(functools.partial(self.model.forward, self.pools), self.static,
                                  use_cuda_graphs=cuda_graphs)
        self.warmup: WarmupResult = run_warmup(
            self.storage, sizes=self.sizing.capture_sizes if options.use_cuda_graphs else (),
            max_seq_len=self.max_context_tokens, accounting=self.sizing.accounting, capture=self._capture,
        )
        self.padding_dummy = preallocate_padding_dummy(
            self.storage, captured_sizes=self.warmup.captured_sizes, accounting=self.sizing.accounting
        )
        self.router = DecodeRouter(self.warmup.captured_sizes, padding_dummy=self.padding_dummy,
                                   enabled=options.use_cuda_graphs)

    def _size(self, spec: ModelSpec, config: KvCacheConfig, options: EngineOptions) -> Sizing:
        if options.budget_bytes is not None:
            config = dataclasses.replace(config, max_gpu_total_bytes=options.budget_bytes)
            return size_pools(spec, config, free_gpu_bytes=None)
        if self.device.type != "cuda":
            raise ConfigError(
                "an engine on CPU needs budget_bytes, found None.", hint="pass EngineOptions(budget_bytes=...)"
            )
        free_bytes, _ = torch.cuda.mem_get_info(self.device)
        return size_pools(spec, config, free_gpu_bytes=free_bytes)

    def _plan_extra_cost(self, spec: ModelSpec, options: EngineOptions) -> ExtraStepCost:
        if options.extra_step_cost is None:
            fraction = extra_step_cost_from_env()
        else:
            fraction = check_fraction(options.extra_step_cost)
        layout = self.sizing.layout
        kinds = [(layer, layout.placements[i].life_cycle_id) for i, layer in enumerate(spec.layers)]
        planned = plan_extra_cost(fraction, kinds)
        if planned.repeated_layers:  # a deliberately slowed engine says so, once
            LOG.warning("Planted slowdown: %s", planned.describe())
        return planned

    def add_sequence(self, context_tokens: int = 0) -> Sequence | None:
        """A sequence whose first `context_tokens` are taken as prefilled; None when the pools are short."""
        cache = self.storage.new_cache()
        if not cache.resize(context_tokens, context_tokens):
            cache.close()
            return None
        return Sequence(cache, context_tokens)

    def step(self, sequences: list[Sequence], token_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Decode one token per sequence: (next ids [B], hidden [B, H]), or None when a block is short.

        On None nothing ran; sequences resized before the shortage keep the block they got for next time.
        """
        for seq in sequences:
            if seq.length_tokens + 1 > self.max_context_tokens:
                raise ConfigError(
                    f"a sequence would grow to {seq.length_tokens + 1} tokens, past max_context_tokens "
                    f"{self.max_context_tokens}.", hint="raise max_context_tokens or finish the sequence",
                )
            if not seq.cache.resize(seq.length_tokens + 1, seq.length_tokens):
                return None
        batch = len(sequences)
        route = self.router.route(batch)
        rows = [(s.cache, s.length_tokens) for s in sequences]
        if route.graph_size is not None and route.padding:
            assert self.padding_dummy is not None  # the router only pads with a dummy
            rows += [(self.padding_dummy, self.padding_dummy.history_tokens)] * route.padding
        self._stage(rows, token_ids)
        if route.graph_size is None:
            next_ids, hidden = self.model.forward(self.pools, self.static.rows(batch))
        else:
            next_ids, hidden = self.runner.replay(route.graph_size)
        for seq in sequences:
            seq.length_tokens += 1
        return next_ids[:batch].clone(), hidden[:batch].clone()

    def metrics(self) -> EngineMetrics:
        routes = self.router.metrics()
        return EngineMetrics(
            self.warmup.requested_sizes, self.warmup.captured_sizes, self.warmup.skipped_sizes,
            self.warmup.coverage, routes.graph_steps, routes.eager_steps, routes.padded_steps, routes.eager_reasons,
        )

    def _capture(self, batch_size: int, dummies: list[KvCache]) -> None:
        self._stage([(d, d.history_tokens) for d in dummies], None)
        self.runner.capture(batch_size)

    def _stage(self, rows: list[tuple[KvCache, int]], token_ids: torch.Tensor | None) -> None:
        """Copy positions, changed block-table rows and token ids into the static buffers."""
        for row, (cache, _) in enumerate(rows):
            owner = (cache.serial, cache.version)
            if self._row_owner[row] != owner:
                for host, table in zip(self._host_tables, cache.tables, strict=True):
                    host[row].fill_(-1)
                    width = min(len(table), self.max_blocks)
                    host[row, :width] = torch.tensor(table[:width], dtype=torch.int64)
                self._row_owner[row] = owner
        count = len(rows)
        for host, device in zip(self._host_tables, self.static.tables, strict=True):
            device[:count].copy_(host[:count], non_blocking=True)
        positions = torch.tensor([length for _, length in rows], dtype=torch.int64)
        self.static.positions[:count].copy_(positions, non_blocking=True)
        if token_ids is None:
            self.static.token_ids[:count].zero_()
        else:
            self.static.token_ids[: len(token_ids)].copy_(token_ids)
            self.static.token_ids[len(token_ids) : count].zero_()
