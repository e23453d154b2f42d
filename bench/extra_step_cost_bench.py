"""How big the planted slowdown $KVENGINE_EXTRA_STEP_COST really is: decode with and without it, same load.

Two engines of one preset (the knob off, and at --fraction) decode the same load side by side: each timed
pair is one `engine.step` of each (what perf-sanity's step latency times), back to back, the order flipping
every pair, so a loaded host's drift hits both alike. The table shows the median of the pairs' time ratios
and its quartiles beside the layer work the knob adds. On CPU it checks the knob's size in seconds (the perf
gate's numbers come from the GPU runs, bench/perf_gate_runs.sh). Usage:

    PYTHONPATH=src python3 bench/extra_step_cost_bench.py [--preset llama-like] [--fraction 0.10] [--device cpu]
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import statistics
import time

import torch

from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions, Sequence
from kvengine.loader import load_preset
from kvengine.quota import GIB


def build(args: argparse.Namespace, fraction: float) -> DecodeEngine:
    spec = load_preset(args.preset)
    spec = dataclasses.replace(spec, runtime=dataclasses.replace(spec.runtime, max_batch_size=args.batch))
    options = EngineOptions(
        device=args.device, budget_bytes=int(args.budget_gib * GIB), max_context_tokens=args.max_context,
        hidden_size=args.hidden_size, compute_dtype="float32" if args.device == "cpu" else None,
        extra_step_cost=fraction,
    )  # fmt: skip
    return DecodeEngine(spec, KvCacheConfig(), options)


def run(args: argparse.Namespace) -> dict[str, float]:
    engines = {"off": build(args, 0.0), "on": build(args, args.fraction)}
    ratios = []
    for index in range(args.rounds):
        batches = {name: _admit(engine, args) for name, engine in engines.items()}
        tokens = torch.zeros(args.batch, dtype=torch.int64, device=engines["off"].device)
        for step in range(2 + args.steps):  # 2 untimed steps, then timed pairs: off/on, the order flipping
            order = ("off", "on") if (index + step) % 2 == 0 else ("on", "off")
            took = {name: _timed_step(engines[name], batches[name], tokens) for name in order}
            if step >= 2:
                ratios.append(took["on"] / took["off"])
        for batch in batches.values():
            for seq in batch:
                seq.cache.close()
    planned = engines["on"].extra_cost
    quartiles = statistics.quantiles(ratios, n=4)
    return {
        "layers": len(planned.repeated_layers), "num_layers": planned.num_layers, "layer_work": planned.layer_fraction,
        "ratio": statistics.median(ratios), "q1": quartiles[0], "q3": quartiles[2], "pairs": len(ratios),
    }  # fmt: skip


def _admit(engine: DecodeEngine, args: argparse.Namespace) -> list[Sequence]:
    batch = [engine.add_sequence(context_tokens=args.input_len) for _ in range(args.batch)]
    if any(seq is None for seq in batch):
        raise SystemExit(f"the pools cannot hold {args.batch} sequences of {args.input_len} tokens; raise --budget-gib")
    return batch  # type: ignore[return-value]


def _timed_step(engine: DecodeEngine, batch: list[Sequence], tokens: torch.Tensor) -> float:
    """Seconds of one engine.step (what perf-sanity's step latency times), synchronized on a GPU."""
    _sync(engine.device)
    began = time.perf_counter()
    if engine.step(batch, tokens) is None:
        raise SystemExit("the pools ran out of blocks mid-round; raise --budget-gib or lower --steps")
    _sync(engine.device)
    return time.perf_counter() - began


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="llama-like")
    parser.add_argument("--fraction", type=float, default=0.10)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--input-len", type=int, default=24)
    parser.add_argument("--steps", type=int, default=20, help="timed step pairs a round (after 2 untimed)")
    parser.add_argument("--rounds", type=int, default=2, help="fresh sequences each round")
    parser.add_argument("--budget-gib", type=float, default=0.25)
    parser.add_argument("--max-context", type=int, default=64)
    parser.add_argument("--hidden-size", type=int, default=64)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(1)  # as the CPU perf cases: small matmuls gain nothing from threads
    r = run(args)
    print(f"preset {args.preset}, {args.device}, batch {args.batch}, context {args.input_len}+, hidden "
          f"{args.hidden_size}: {r['pairs']:.0f} pairs of decode steps (off, on), their time ratio")  # fmt: skip
    print("| fraction | layers repeated | layer work added | step time on / off: median (quartiles) |")
    print("|---|---|---|---|")
    print(f"| {args.fraction:g} | {r['layers']:.0f} of {r['num_layers']:.0f} | {r['layer_work']:.1%} | "
          f"{r['ratio']:.3f} ({r['q1']:.3f} .. {r['q3']:.3f}) |")  # fmt: skip


if __name__ == "__main__":
    main()
