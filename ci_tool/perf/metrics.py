"""The metrics a perf-sanity case records: the one registry the harness, the gate, baselines and plots read.

    metric                  unit       better   default threshold   gated against a baseline
    decode_tokens_per_s     tokens/s   higher   10 %                yes
    step_latency_p50_ms     ms         lower    15 %                yes
    step_latency_p99_ms     ms         lower    50 %                yes (a tail: noisy)
    bandwidth_fraction      of peak    higher   10 %                yes (GPU only)
    graph_coverage          fraction   higher   -                   no: the graph rule (gate.py) decides
    host_wait_fraction      of wall    lower    -                   no: a busy host's mark (busy_host.py reads it)
    host_probe_ms           ms         lower    -                   no, but baselined: the host's speed then
    device_step_ms          ms         lower    -                   no: what of a step is the device's
    eager_steps, graph_steps, graph_speedup, achieved_gb_per_s, pool_share_<pool>: recorded, never gated

A threshold is relative: 0.10 means a value 10 % worse than its baseline is a regression. The first three are
wall-clock metrics: the host's CPUs are in them, not the device alone (busy_host.py). A reference metric is
baselined beside the gated ones and never gated itself: the gate compares a run's with it (host_probe.py).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ci_tool.errors import PerfError, did_you_mean


class Better(enum.StrEnum):
    HIGHER = "higher"
    LOWER = "lower"


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: Better
    threshold: float | None  # the default relative threshold; None = recorded only, never gated
    title: str
    wall_clock: bool = False  # timed on the host's clock: a busy host slows it with no change in the code
    reference: bool = False  # baselined, never gated: what the host was like when the baselines were set

    @property
    def gated(self) -> bool:
        return self.threshold is not None

    def worse_by(self, value: float, baseline: float) -> float:
        """How much worse `value` is than `baseline`, relative (negative: better)."""
        if baseline == 0:
            return 0.0
        change = (value - baseline) / baseline
        return -change if self.better is Better.HIGHER else change


POOL_SHARE_PREFIX = "pool_share_"

_METRICS = (
    Metric("decode_tokens_per_s", "tokens/s", Better.HIGHER, 0.10, "decode throughput", wall_clock=True),
    Metric("step_latency_p50_ms", "ms", Better.LOWER, 0.15, "decode step latency, median", wall_clock=True),
    Metric("step_latency_p99_ms", "ms", Better.LOWER, 0.50, "decode step latency, 99th percentile", wall_clock=True),
    Metric("bandwidth_fraction", "of peak", Better.HIGHER, 0.10, "decode step memory bandwidth / device peak"),
    Metric("graph_coverage", "fraction", Better.HIGHER, None, "CUDA-graph sizes captured / requested"),
    Metric("eager_steps", "steps", Better.LOWER, None, "decode steps that ran eager"),
    Metric("graph_steps", "steps", Better.HIGHER, None, "decode steps that replayed a graph"),
    Metric("graph_speedup", "x", Better.HIGHER, None, "eager step time / graph step time"),
    Metric("achieved_gb_per_s", "GB/s", Better.HIGHER, None, "decode step memory bandwidth"),
    Metric("host_wait_fraction", "of wall time", Better.LOWER, None, "time the measuring thread waited for a CPU"),
    Metric("host_probe_ms", "ms", Better.LOWER, None, "a fixed CPU-bound loop's time: the host's speed",
           reference=True),
    Metric("device_step_ms", "ms", Better.LOWER, None, "the final batch's decode step on the device alone"),
)
HOST_WAIT = "host_wait_fraction"
HOST_PROBE = "host_probe_ms"
DEVICE_STEP = "device_step_ms"
METRICS: dict[str, Metric] = {m.name: m for m in _METRICS}
GATED: tuple[str, ...] = tuple(m.name for m in _METRICS if m.gated)
BASELINED: tuple[str, ...] = GATED + tuple(m.name for m in _METRICS if m.reference)


def metric(name: str) -> Metric:
    """The registry entry of `name` (`pool_share_<pool>` metrics share one entry shape)."""
    if name in METRICS:
        return METRICS[name]
    if name.startswith(POOL_SHARE_PREFIX) and len(name) > len(POOL_SHARE_PREFIX):
        pool = name[len(POOL_SHARE_PREFIX) :]
        return Metric(name, "fraction", Better.HIGHER, None, f"share of the KV budget of pool {pool}")
    known = (*METRICS, f"{POOL_SHARE_PREFIX}<pool>")
    raise PerfError(
        f"expected a perf metric, found {name!r}",
        hint=did_you_mean(name, METRICS) or f"metrics are {', '.join(known)}",
    )
