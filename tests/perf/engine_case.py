"""A perf-sanity case on the real engine: the config's server part builds it, the client part loads it.

On a GPU the engine captures CUDA graphs and runs the case's full sizes; in CPU mode the same code runs the
client's CPU sizes, graphs off (the padded static-batch path still runs, so coverage means the same).
A case runs its config's warm-up rounds (discarded) and measured rounds on one engine, in this process; the
metrics are the medians of the measured rounds, with their noise (ci_tool.perf.noise).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from ci_tool.perf import host_wait
from ci_tool.perf.config import WARMUP_STEPS, GraphPolicy, Mode, PerfCase
from ci_tool.perf.devices import peak_memory_bytes_per_s
from ci_tool.perf.host_probe import probe_ms
from ci_tool.perf.metrics import DEVICE_STEP, HOST_PROBE, HOST_WAIT
from ci_tool.perf.noise import summarize, summarize_rounds
from kvengine.benchmark import DecodeLoad, DecodeMeasurement, run_decode
from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.loader import load_preset
from kvengine.quota import GIB


def build_engine(case: PerfCase) -> DecodeEngine:
    spec = load_preset(case.model)
    limits = dataclasses.replace(
        spec.runtime, max_batch_size=case.max_batch_size, max_num_tokens=case.max_num_tokens,
        max_seq_len=max(spec.runtime.max_seq_len, case.max_context_tokens),
    )  # fmt: skip
    spec = dataclasses.replace(spec, runtime=limits)
    kv = case.kv_cache
    config = KvCacheConfig(tokens_per_block=kv.tokens_per_block, avg_seq_len=kv.avg_seq_len, pool_ratio=kv.pool_ratio)
    options = EngineOptions(
        device="cuda" if case.mode is Mode.GPU else "cpu",
        budget_bytes=int(kv.budget_gib * GIB),
        max_context_tokens=case.max_context_tokens,
        use_cuda_graphs=case.cuda_graphs is not GraphPolicy.OFF,
        hidden_size=case.hidden_size,
        # CPU mode checks coverage, not speed: float32 avoids bf16 matmuls, which are very slow on CPUs
        compute_dtype="float32" if case.mode is Mode.CPU else None,
    )
    return DecodeEngine(spec, config, options)


STEP_COUNTS = ("graph_steps", "eager_steps")  # the engine's, over every round: a step eager in any round counts


@dataclass(frozen=True)
class Measured:
    """A case's rounds on one engine: the last round's measurement and each metric's median and noise."""

    last: DecodeMeasurement
    values: dict[str, float]  # the median of the measured rounds (names from ci_tool.perf.metrics)
    noise: dict[str, float]  # 1.4826 * MAD of the measured rounds, in each metric's unit
    rounds: int


def measure(case: PerfCase) -> Measured:
    """Run the case's warm-up rounds (discarded) and measured rounds on one engine, in this process."""
    engine = build_engine(case)
    load = DecodeLoad(case.load.concurrency, case.load.input_len, case.load.output_len, WARMUP_STEPS)
    per_round = []
    found = None
    for index in range(case.rounds.warmup + case.rounds.measured):
        probed = probe_ms()  # the host's speed around the round: before and after it
        # CPU mode checks coverage, not speed: the final batch's device step is timed on a GPU only
        with host_wait.measuring() as waited:
            found = run_decode(engine, load_preset(case.model), load, hidden_size=case.hidden_size,
                               time_device_step=case.mode is Mode.GPU)  # fmt: skip
        probed = (probed + probe_ms()) / 2
        if index >= case.rounds.warmup:
            per_round.append({**_values(case, found, waited.fraction), HOST_PROBE: probed})
    assert found is not None  # Rounds.measured >= 1 (config.py)
    summaries = summarize_rounds(per_round)
    for name in STEP_COUNTS:  # counts since the engine was built: the last round's covers every round
        summaries[name] = summarize([per_round[-1][name]])
    del engine
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return Measured(found, {name: s.median for name, s in summaries.items()},
                    {name: s.noise for name, s in summaries.items()}, len(per_round))  # fmt: skip


def _values(case: PerfCase, found: DecodeMeasurement, host_waited: float | None) -> dict[str, float]:
    """One round's metrics (the step counts are the engine's since it was built, STEP_COUNTS); `host_waited`:
    the share of the round this thread waited for a CPU (ci_tool.perf.host_wait; None: not counted)."""
    values: dict[str, float] = {
        "decode_tokens_per_s": found.tokens_per_s,
        "step_latency_p50_ms": found.percentile_ms(0.5),
        "step_latency_p99_ms": found.percentile_ms(0.99),
        "graph_coverage": found.coverage,
        "graph_steps": float(found.graph_steps),
        "eager_steps": float(found.eager_steps),
        **{f"pool_share_{name}": share for name, share in found.pool_shares.items()},
    }
    if host_waited is not None:
        values[HOST_WAIT] = host_waited
    achieved = found.achieved_bytes_per_s
    if case.mode is Mode.GPU and achieved is not None and found.device_step_ms is not None:
        values[DEVICE_STEP] = found.device_step_ms
        values["achieved_gb_per_s"] = achieved / 1e9
        peak = peak_memory_bytes_per_s(torch.cuda.get_device_name().removeprefix("NVIDIA ").strip())
        if peak is not None:
            values["bandwidth_fraction"] = achieved / peak
        if found.eager_step_ms is not None:
            values["graph_speedup"] = found.eager_step_ms / found.device_step_ms
    return values
