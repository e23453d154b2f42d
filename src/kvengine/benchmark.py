"""Run a decode load on a real engine and measure it: what perf-sanity cases and the decode bench record.

    build the engine (sizing, pools, warm-up: CUDA graphs on a GPU, the same padded path eagerly on CPU)
    admit `concurrency` sequences of `input_len` prefilled tokens, decode `warmup_steps + output_len` steps
    step latency = each timed `engine.step` (bookkeeping included), synchronized on a GPU
    device step  = the graph replay (or eager forward) of the final batch alone, timed with CUDA events, and
                   the bytes it must move (weights, the KV blocks its rows attend, the new K/V written);
                   `time_device_step=False` leaves it out (CPU perf sanity checks coverage, not speed)

A pool too small for the load is an error with numbers (`BenchError`): the case cannot run as configured.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

import torch

from kvengine.engine import DecodeEngine, Sequence
from kvengine.errors import KvEngineError
from kvengine.lifecycle import CacheLayout
from kvengine.spec import DTYPE_BYTES, ModelSpec

WARMUP_STEPS = 2
DEVICE_STEP_REPEATS = 20


class BenchError(KvEngineError):
    """A load the engine cannot run as configured (the pools cannot hold it)."""


@dataclass(frozen=True)
class DecodeLoad:
    concurrency: int
    input_len: int
    output_len: int  # timed decode steps
    warmup_steps: int = WARMUP_STEPS  # untimed decode steps before them


@dataclass(frozen=True)
class DecodeMeasurement:
    tokens_per_s: float
    step_ms: tuple[float, ...]  # every timed step, in order
    requested_sizes: tuple[int, ...]
    captured_sizes: tuple[int, ...]
    graph_steps: int
    eager_steps: int
    pool_shares: dict[str, float]  # pool name (`window1024`, `full`) -> share of the KV budget
    device_step_ms: float | None  # the final batch's step alone (graph replay when captured); None: not timed
    eager_step_ms: float | None  # the same batch's eager forward, when a graph ran the device step
    step_bytes: int  # what the device step must move

    @property
    def coverage(self) -> float:
        return len(self.captured_sizes) / len(self.requested_sizes) if self.requested_sizes else 1.0

    def percentile_ms(self, fraction: float) -> float:
        ordered = sorted(self.step_ms)
        return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]

    @property
    def achieved_bytes_per_s(self) -> float | None:
        return self.step_bytes / (self.device_step_ms / 1000) if self.device_step_ms is not None else None


def run_decode(
    engine: DecodeEngine, spec: ModelSpec, load: DecodeLoad, *, hidden_size: int, time_device_step: bool = True
) -> DecodeMeasurement:
    sequences = _admit(engine, load)
    try:
        return _decode(engine, spec, load, sequences, hidden_size=hidden_size, time_device_step=time_device_step)
    finally:  # the blocks go back, so one engine can run the load again (a perf case's rounds)
        for seq in sequences:
            seq.cache.close()


def _decode(
    engine: DecodeEngine, spec: ModelSpec, load: DecodeLoad, sequences: list[Sequence], *, hidden_size: int,
    time_device_step: bool,
) -> DecodeMeasurement:
    tokens = torch.zeros(load.concurrency, dtype=torch.int64, device=engine.device)
    steps_ms = []
    started = 0.0
    for step in range(load.warmup_steps + load.output_len):
        _sync(engine.device)
        begin = time.perf_counter()
        if step == load.warmup_steps:
            started = begin
        out = engine.step(sequences, tokens)
        if out is None:
            raise BenchError(
                f"the pools ran out of blocks at decode step {step + 1} of {load.warmup_steps + load.output_len} "
                f"with {load.concurrency} sequences of {sequences[0].length_tokens} tokens.",
                hint="raise budget_gib or lower the concurrency or output_len",
            )
        tokens = out[0]
        _sync(engine.device)
        if step >= load.warmup_steps:
            steps_ms.append((time.perf_counter() - begin) * 1000)
    total_s = time.perf_counter() - started
    metrics = engine.metrics()
    device_ms, eager_ms = _device_step(engine, load.concurrency) if time_device_step else (None, None)
    lengths = [s.length_tokens for s in sequences]
    return DecodeMeasurement(
        tokens_per_s=load.concurrency * load.output_len / total_s,
        step_ms=tuple(steps_ms),
        requested_sizes=metrics.requested_capture_sizes,
        captured_sizes=metrics.captured_sizes,
        graph_steps=metrics.graph_steps,
        eager_steps=metrics.eager_steps,
        pool_shares=pool_shares(engine.sizing.layout, [g.share for g in engine.sizing.pools.groups]),
        device_step_ms=device_ms,
        eager_step_ms=eager_ms,
        step_bytes=decode_step_bytes(spec, engine.sizing.layout, lengths, hidden_size=hidden_size,
                                     vocab_size=engine.model.embed.shape[0]),
    )


def _admit(engine: DecodeEngine, load: DecodeLoad) -> list[Sequence]:
    sequences: list[Sequence] = []
    for _ in range(load.concurrency):
        seq = engine.add_sequence(context_tokens=load.input_len)
        if seq is None:
            raise BenchError(
                f"the pools hold only {len(sequences)} of {load.concurrency} sequences of {load.input_len} "
                f"prefilled tokens (slots per pool group: {list(engine.sizing.pools.num_slots)}).",
                hint="raise budget_gib or lower the concurrency or input_len",
            )
        sequences.append(seq)
    return sequences


def _device_step(engine: DecodeEngine, batch: int) -> tuple[float, float | None]:
    """(device step ms as routed, eager forward ms when a graph ran it): the last staged batch, replayed."""
    padded = next((s for s in engine.runner.captured_sizes if s >= batch), None)
    eager_ms = _timed(engine, lambda: engine.model.forward(engine.pools, engine.static.rows(batch)))
    if padded is None or not engine.runner.use_cuda_graphs:
        return eager_ms, None
    return _timed(engine, lambda: engine.runner.replay(padded)), eager_ms


def _timed(engine: DecodeEngine, run: object) -> float:
    """Median ms of DEVICE_STEP_REPEATS runs (CUDA events on a GPU). The KV written is the same token again."""
    assert callable(run)
    run()
    times = []
    for _ in range(DEVICE_STEP_REPEATS):
        if engine.device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            run()
            times.append((time.perf_counter() - begin) * 1000)
    return statistics.median(times)


def pool_shares(layout: CacheLayout, shares: list[float]) -> dict[str, float]:
    """`window1024` / `full` (with the group id when two groups would share a name) -> share."""
    names = []
    for group in layout.groups:
        window = layout.group_window(group.group_id)
        names.append("full" if window is None else f"window{window}")
    return {
        (name if names.count(name) == 1 else f"{name}_{index}"): share
        for index, (name, share) in enumerate(zip(names, shares, strict=True))
    }


def decode_step_bytes(
    spec: ModelSpec, layout: CacheLayout, lengths: list[int], *, hidden_size: int, vocab_size: int
) -> int:
    """Bytes one decode step of rows at `lengths` (tokens already cached) must move at the least.

    Per layer: its weights once; per row the KV blocks its attention reads (block-granular, as a paged
    kernel reads them: the window's blocks for a sliding layer, all for a full one) and the new token's K/V
    written. Plus the embedding, read for the logits. Activations are left out (KBs)."""
    tpb = layout.tokens_per_block
    total = vocab_size * hidden_size * DTYPE_BYTES[spec.layers[0].dtype]
    for layer_id, layer in enumerate(spec.layers):
        compute_bytes = 2 if DTYPE_BYTES[layer.dtype] <= 2 else 4
        kv_dim = layer.num_kv_heads * layer.head_dim
        weights = hidden_size * (layer.q_heads * layer.head_dim * 2 + kv_dim * len(layer.roles))
        total += weights * compute_bytes
        cycle = layout.life_cycles[layout.placements[layer_id].life_cycle_id]
        for length in lengths:
            seq_len = length + 1
            first = 0 if cycle.window_tokens is None else max(0, seq_len - cycle.window_tokens) // tpb
            blocks = -(-seq_len // tpb) - first + min(first, cycle.sink_blocks)
            total += blocks * tpb * layer.bytes_per_token() + layer.bytes_per_token()
    return total


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()
