"""Decode throughput with CUDA graphs vs eager, Gemma-like preset, default sizing vs the old behaviour.

For each sizing ("default": allocator fallback; "old": typical length = max_seq_len) it builds the
engine twice on the same budget: with graphs (warmup captures what fits, batches pad to the next
captured size, the rest runs eager) and graphs off (always eager). It prints one table row per
sizing and, with --json, writes the numbers. Usage:

    PYTHONPATH=src python3 bench/engine_decode_bench.py [--device cuda] [--json results.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import time
from collections.abc import Callable

import torch

from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.loader import load_preset
from kvengine.quota import GIB
from kvengine.storage import KvStorage

SIZINGS = {"default": None, "old (avg = max_seq_len)": "max_seq_len"}


def measure(engine: DecodeEngine, *, batch: int, steps: int, warmup_steps: int, rounds: int) -> float:
    """Median tokens/s over `rounds` fresh batches (each: warmup steps, then `steps` timed steps)."""
    results = []
    for _ in range(rounds):
        sequences = [engine.add_sequence() for _ in range(batch)]
        if any(s is None for s in sequences):
            raise SystemExit(f"the pools cannot hold {batch} sequences; lower --batch")
        tokens = torch.zeros(batch, dtype=torch.int64, device=engine.device)
        start = 0.0
        for step in range(warmup_steps + steps):
            if step == warmup_steps:
                _sync(engine.device)
                start = time.perf_counter()
            out = engine.step(sequences, tokens)  # type: ignore[arg-type]
            if out is None:
                raise SystemExit("ran out of blocks mid-run; lower --steps")
            tokens = out[0]
        _sync(engine.device)
        results.append(batch * steps / (time.perf_counter() - start))
        for seq in sequences:
            seq.cache.close()  # type: ignore[union-attr]
    return statistics.median(results)


def step_ms(engine: DecodeEngine, *, batch: int, repeats: int = 20) -> dict[str, float | None]:
    """Device step alone, no bookkeeping: graph replay of the padded size vs the eager forward of `batch` rows."""
    padded = next((s for s in engine.runner.captured_sizes if s >= batch), None)

    def timed(fn: Callable[[], object]) -> float:
        fn()
        _sync(engine.device)
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        _sync(engine.device)
        return round((time.perf_counter() - start) / repeats * 1000, 3)

    eager = timed(lambda: engine.model.forward(engine.pools, engine.static.rows(batch)))
    graph = timed(lambda: engine.runner.replay(padded)) if padded and engine.runner.use_cuda_graphs else None
    return {"eager_forward_ms": eager, "graph_replay_ms": graph, "graph_size": padded}


def concurrent_sequences(engine: DecodeEngine, length_tokens: int) -> int:
    """How many decoding sequences of `length_tokens` the same pool sizes would hold (bookkeeping only)."""
    storage = KvStorage(engine.sizing.layout, engine.sizing.pools.num_slots)
    count = 0
    while storage.new_cache().resize(length_tokens + 1, length_tokens):
        count += 1
    return count


def run(args: argparse.Namespace) -> list[dict[str, object]]:
    spec = load_preset(args.preset)
    rows = []
    for label, avg in SIZINGS.items():
        config = KvCacheConfig(avg_seq_len=spec.runtime.max_seq_len if avg else None)
        result: dict[str, object] = {"sizing": label}
        for graphs in (True, False):
            options = EngineOptions(device=args.device, budget_bytes=int(args.budget_gib * GIB),
                                    max_context_tokens=args.max_context, use_cuda_graphs=graphs,
                                    hidden_size=args.hidden_size)
            build_start = time.perf_counter()
            engine = DecodeEngine(spec, config, options)
            build_s = time.perf_counter() - build_start
            tokens_per_s = measure(engine, batch=args.batch, steps=args.steps, warmup_steps=args.warmup_steps,
                                   rounds=args.rounds)
            metrics = engine.metrics()
            if graphs:
                result.update(
                    window_slots=engine.sizing.pools.groups[0].num_slots,
                    full_slots=engine.sizing.pools.groups[1].num_slots,
                    concurrent_1k_sequences=concurrent_sequences(engine, 1024),
                    captured_sizes=list(metrics.captured_sizes),
                    skipped_sizes=list(metrics.skipped_capture_sizes),
                    graph_steps=metrics.graph_steps,
                    eager_steps=metrics.eager_steps,
                    build_s=round(build_s, 2),
                    tokens_per_s=round(tokens_per_s, 1),
                    **step_ms(engine, batch=args.batch),
                )
            else:
                result["eager_only_tokens_per_s"] = round(tokens_per_s, 1)
            del engine
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        rows.append(result)
    return rows


def render(rows: list[dict[str, object]], args: argparse.Namespace) -> str:
    lines = [
        f"preset {args.preset}, budget {args.budget_gib} GiB, batch {args.batch}, median of {args.rounds} rounds "
        f"of {args.steps} timed steps, hidden {args.hidden_size}, device {args.device} ({_device_name(args.device)})",
        "| sizing | window slots | 1k-token seqs that fit | captured sizes | skipped | steps graph/eager "
        "| tokens/s (graphs on, as routed) | tokens/s (graphs off) | ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = float(r["tokens_per_s"]) / float(r["eager_only_tokens_per_s"])  # type: ignore[arg-type]
        lines.append(
            f"| {r['sizing']} | {r['window_slots']} | {r['concurrent_1k_sequences']} | "
            f"{_sizes(r['captured_sizes'])} | {_sizes(r['skipped_sizes'])} | {r['graph_steps']}/{r['eager_steps']} "
            f"| {r['tokens_per_s']:.0f} | {r['eager_only_tokens_per_s']:.0f} | {ratio:.2f}x |"
        )
    lines += ["", "| sizing | eager forward, ms (batch) | graph replay, ms (padded size) |", "|---|---|---|"]
    for r in rows:
        graph = f"{r['graph_replay_ms']} ({r['graph_size']})" if r["graph_replay_ms"] is not None else "no graph"
        lines.append(f"| {r['sizing']} | {r['eager_forward_ms']} ({args.batch}) | {graph} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="gemma-like")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--budget-gib", type=float, default=4.0)
    parser.add_argument("--batch", type=int, default=80, help="80 fits the old sizing's window pool (89 slots)")
    parser.add_argument("--steps", type=int, default=28, help="warmup + timed steps stay in one 32-token block")
    parser.add_argument("--warmup-steps", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-context", type=int, default=128, help="block-table width of the decode step")
    parser.add_argument("--hidden-size", type=int, default=2048)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    rows = run(args)
    print(render(rows, args))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({"args": vars(args), "device_name": _device_name(args.device), "rows": rows}, out, indent=2)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _device_name(device: str) -> str:
    return torch.cuda.get_device_name() if device.startswith("cuda") else "CPU"


def _sizes(sizes: object) -> str:
    return ",".join(str(s) for s in sizes) if sizes else "none"  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
