"""How much of a wall-clock slowdown the host can explain: a thread waiting for a CPU, or a host running slower
than when the baselines were set. The gate forgives a wall-clock metric that passes net of that, no more.

    waited     the measuring thread waited for a CPU more than HOST_BUSY of the measured time (host_wait.py):
               at most that share of the wall time was the host's doing
    ran slow   the host probe (host_probe.py) took more than HOST_SLOW x its baseline: the step's host part
               (its wall time less the device's step) would have taken 1/slowdown of its time, the device's
               part the same

Both measure the same host, so the larger explanation is taken, never their product. The device's own step time
(bandwidth_fraction) is not wall-clock and is judged as always: a slower kernel fails on a busy host too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ci_tool.perf.baselines import Baseline
from ci_tool.perf.metrics import DEVICE_STEP, HOST_PROBE, HOST_WAIT, Better, metric

# Half the tightest wall-clock threshold (10 %): a thread that waited less cannot have made a case 10 % slower
# alone. On an H100 host with a busy loop on every core, a CPU-bound case (Gemma-like b80) fell 20 % in both of
# its processes while its device step moved 0.6 % (docs/PERF.md, "The H100 gate, ten and ten").
HOST_BUSY = 0.05
# Quiet H100 runs' probes spread 4-8 % (1.4826 x MAD, the committed H100.yaml); a slow spell took 1.8-2.7x.
HOST_SLOW = 1.10
P50 = "step_latency_p50_ms"


@dataclass(frozen=True)
class HostLoss:
    """The share of a run's wall time the host may have taken: net of it, a wall time is wall x (1 - share)."""

    share: float
    reason: str

    def net(self, name: str, value: float) -> float:
        """A wall-clock metric's value had the host not taken its share: throughput up, latency down."""
        kept = 1.0 - min(self.share, 0.99)
        return value / kept if metric(name).better is Better.HIGHER else value * kept


def host_loss(values: Mapping[str, float], baselines: Mapping[str, Baseline]) -> HostLoss | None:
    """The larger of the two explanations a run's values give (None: the host was neither busy nor slow)."""
    found = [loss for loss in (_waited(values), _ran_slow(values, baselines)) if loss is not None]
    return max(found, key=lambda loss: loss.share, default=None)


def _waited(values: Mapping[str, float]) -> HostLoss | None:
    wait = values.get(HOST_WAIT, 0.0)
    if wait <= HOST_BUSY:
        return None
    return HostLoss(wait, f"a busy host (the measuring thread waited {wait:.0%} of the measured time for a CPU)")


def _ran_slow(values: Mapping[str, float], baselines: Mapping[str, Baseline]) -> HostLoss | None:
    probe, reference = values.get(HOST_PROBE), baselines.get(HOST_PROBE)
    if probe is None or reference is None or reference.value <= 0 or probe <= HOST_SLOW * reference.value:
        return None
    slowdown = probe / reference.value
    host_part = _host_part(values)
    share = host_part * (1.0 - 1.0 / slowdown)
    return HostLoss(share, f"a slow host (the host probe took {probe:.3g} ms against {reference.value:.3g} ms when "
                           f"the baselines were set, {slowdown:.2f}x; the host's part of a step: {host_part:.0%})")


def _host_part(values: Mapping[str, float]) -> float:
    """The share of a step's wall time that is not the device's step (all of it where either is unknown)."""
    step, device = values.get(P50), values.get(DEVICE_STEP)
    if step is None or device is None or step <= 0:
        return 1.0
    return min(1.0, max(0.0, (step - device) / step))
