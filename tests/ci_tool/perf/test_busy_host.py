"""A busy or slow host against slow code: the measuring thread's wait for a CPU, counted by Linux (a real hog
pinned on one core beside it), the host probe's time against its baseline's, and the gate forgiving a wall-clock
slowdown the host can explain, and no more."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.baselines import Baseline
from ci_tool.perf.busy_host import HostLoss, host_loss
from ci_tool.perf.gate import judge
from ci_tool.perf.host_probe import probe_ms
from ci_tool.perf.host_wait import SCHEDSTAT, measuring, run_queue_wait_ns
from ci_tool.stages.modes import PerfGate

CASE = "gpu-gemma_like-pool4g-b80"
TPS, P50, FRACTION = "decode_tokens_per_s", "step_latency_p50_ms", "bandwidth_fraction"
# The H100 false alarm: the baselines as `perf baseline set` wrote them, and the run under a busy loop on
# each of the host's 16 cores: throughput 20 % down in both processes, the device's step 0.6 % (one stage run).
BASELINES = {
    TPS: Baseline(CASE, "H100", TPS, 33783.16, 0.10, runs=3, spread=666.3),
    P50: Baseline(CASE, "H100", P50, 2.354, 0.15, runs=3, spread=0.0482),
    FRACTION: Baseline(CASE, "H100", FRACTION, 0.5004, 0.10, runs=3, spread=0.000435),
}
HOG_RUN = {TPS: 26999.0, P50: 2.919, FRACTION: 0.4973}
HOG_NOISE = {TPS: 216.5, P50: 0.0178, FRACTION: 0.0003}


def verdicts(values: dict[str, float]) -> dict[str, PerfVerdict]:
    judged = judge(values, BASELINES, gate=PerfGate.FAIL, requires_graphs=True, noise=HOG_NOISE)
    return {j.metric: j.verdict for j in judged if j.metric in BASELINES}


def test_a_slowdown_the_hosts_wait_explains_is_skipped_and_says_why() -> None:
    judged = judge({**HOG_RUN, "host_wait_fraction": 0.21}, BASELINES, gate=PerfGate.FAIL, requires_graphs=True,
                   noise=HOG_NOISE)  # fmt: skip
    assert {j.metric: j.verdict for j in judged} == {
        TPS: PerfVerdict.SKIPPED, P50: PerfVerdict.SKIPPED, FRACTION: PerfVerdict.PASSED,
        "host_wait_fraction": PerfVerdict.RECORDED,
    }  # fmt: skip
    assert judged[0].note == (
        "not gated: a busy host (the measuring thread waited 21% of the measured time for a CPU); net of that it "
        "passes: decode_tokens_per_s 2.7e+04 tokens/s is 20.1% worse than its baseline 3.378e+04 (threshold "
        "10%; noise 883 tokens/s = baseline 666 + run 216, 3x = 7.8%)"
    )


@pytest.mark.parametrize(
    ("host_wait", "expected"),
    [
        pytest.param(None, PerfVerdict.REGRESSED, id="not-counted"),
        pytest.param(0.04, PerfVerdict.REGRESSED, id="quiet-host"),
        pytest.param(0.10, PerfVerdict.REGRESSED, id="a-wait-too-short-to-explain-it"),
        pytest.param(0.21, PerfVerdict.SKIPPED, id="a-wait-long-enough"),
    ],
)
def test_the_wait_forgives_no_more_than_it_can_explain(host_wait: float | None, expected: PerfVerdict) -> None:
    values = HOG_RUN if host_wait is None else {**HOG_RUN, "host_wait_fraction": host_wait}
    assert verdicts(values)[TPS] is expected


def test_the_devices_own_measure_is_judged_on_a_busy_host() -> None:
    planted = {TPS: 10263.5, P50: 7.9, FRACTION: 0.1166, "host_wait_fraction": 0.5}  # the torch attention path
    assert verdicts(planted) == {TPS: PerfVerdict.REGRESSED, P50: PerfVerdict.REGRESSED,
                                 FRACTION: PerfVerdict.REGRESSED}  # fmt: skip


def test_net_of_the_hosts_share_throughput_rises_and_latency_falls() -> None:
    loss = HostLoss(0.2, "")
    assert (loss.net(TPS, 800.0), loss.net(P50, 10.0)) == (1000.0, 8.0)


@pytest.fixture
def one_core() -> Iterator[int]:
    """This thread pinned to one core (the first it may use), put back after."""
    allowed = os.sched_getaffinity(0)
    core = min(allowed)
    os.sched_setaffinity(0, {core})
    yield core
    os.sched_setaffinity(0, allowed)


@pytest.mark.skipif(not SCHEDSTAT.exists(), reason=f"this kernel keeps no {SCHEDSTAT}")
def test_a_thread_beside_busy_loops_on_its_core_waits_most_of_its_time(one_core: int) -> None:
    hog = f"import os; os.sched_setaffinity(0, {{{one_core}}})\nwhile True: pass"
    hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(3)]
    try:
        time.sleep(0.3)  # the hogs running on the core (a wait is counted only while they are)
        with measuring() as waited:
            deadline = time.perf_counter() + 1.0
            while time.perf_counter() < deadline:  # runnable all along: every moment off the CPU is a wait
                pass
    finally:
        for process in hogs:
            process.kill()
            process.wait()
    assert waited.fraction is not None and waited.fraction > 0.3  # about 3/4 with three hogs sharing the core


def test_a_count_the_kernel_does_not_keep_is_none(tmp_path: Path) -> None:
    (tmp_path / "garbled").write_text("12\n", encoding="ascii")
    (tmp_path / "kept").write_text("1000 2500 7\n", encoding="ascii")
    assert [run_queue_wait_ns(tmp_path / name) for name in ("missing", "garbled", "kept")] == [None, None, 2500]
    with measuring(tmp_path / "missing") as waited:
        pass
    assert waited.fraction is None


# An H100 host whose cores ran at half speed for seconds at a time, no thread waiting on a run queue: the
# DeepSeek-like case's step latency rose from 3.2 to 3.8 ms in some processes, the device's step 2.66 ms in all.
# Its baselines as `perf baseline set` wrote them, with the host probe's time then; the probe bench measured a
# fixed loop at 65.0 ms in a fast process and 147.3 ms in a slow one (2.27x), so the run's probe is 2.27x too.
DEEPSEEK = "gpu-deepseek_v4_like-pool8g-b64_1k"
DEVICE, PROBE = "device_step_ms", "host_probe_ms"
SLOW_BASELINES = {
    TPS: Baseline(DEEPSEEK, "H100", TPS, 19069.9, 0.10, runs=3, spread=203.2),
    P50: Baseline(DEEPSEEK, "H100", P50, 3.218, 0.15, runs=3, spread=0.0213),
    FRACTION: Baseline(DEEPSEEK, "H100", FRACTION, 0.4107, 0.10, runs=3, spread=0.00034),
    PROBE: Baseline(DEEPSEEK, "H100", PROBE, 16.3, 0.0, runs=3, spread=0.4),
}
SLOW_RUN = {TPS: 16048.2, P50: 3.797, FRACTION: 0.4117, DEVICE: 2.66, PROBE: 16.3 * 147.3 / 65.0,
            "host_wait_fraction": 0.0}  # fmt: skip
SLOW_NOISE = {TPS: 89.0, P50: 0.0222, FRACTION: 0.0003}


def slow_verdicts(values: dict[str, float]) -> dict[str, PerfVerdict]:
    judged = judge(values, SLOW_BASELINES, gate=PerfGate.FAIL, requires_graphs=True, noise=SLOW_NOISE)
    return {j.metric: j.verdict for j in judged if j.metric in (TPS, P50, FRACTION)}


def test_a_slowdown_a_slow_host_explains_is_skipped_and_says_why() -> None:
    judged = judge(SLOW_RUN, SLOW_BASELINES, gate=PerfGate.FAIL, requires_graphs=True, noise=SLOW_NOISE)
    assert {j.metric: j.verdict for j in judged} == {
        TPS: PerfVerdict.SKIPPED, P50: PerfVerdict.SKIPPED, FRACTION: PerfVerdict.PASSED,
        DEVICE: PerfVerdict.RECORDED, PROBE: PerfVerdict.RECORDED, "host_wait_fraction": PerfVerdict.RECORDED,
    }  # fmt: skip
    assert judged[1].note.startswith(
        "not gated: a slow host (the host probe took 36.9 ms against 16.3 ms when the baselines were set, 2.27x; "
        "the host's part of a step: 30%); net of that it passes: step_latency_p50_ms 3.797 ms is 18.0% worse"
    )


@pytest.mark.parametrize(
    ("changed", "expected"),
    [
        pytest.param({PROBE: 16.9}, PerfVerdict.REGRESSED, id="a-host-as-fast-as-the-baselines"),
        pytest.param({PROBE: None}, PerfVerdict.REGRESSED, id="no-probe-recorded"),
        # the same wall time, but the device's step took most of it: the host's part cannot explain 16 %
        pytest.param({DEVICE: 3.55}, PerfVerdict.REGRESSED, id="the-device-took-the-time"),
        pytest.param({}, PerfVerdict.SKIPPED, id="the-host-took-the-time"),
    ],
)
def test_a_slow_host_forgives_no_more_than_its_part_of_the_step(
    changed: dict[str, float | None], expected: PerfVerdict
) -> None:
    values = {k: v for k, v in {**SLOW_RUN, **changed}.items() if v is not None}
    assert slow_verdicts(values)[TPS] is expected


def test_a_slow_host_without_a_probe_baseline_is_judged_as_before() -> None:
    baselines = {k: v for k, v in SLOW_BASELINES.items() if k != PROBE}  # a file set before the probe was
    judged = judge(SLOW_RUN, baselines, gate=PerfGate.FAIL, requires_graphs=True, noise=SLOW_NOISE)
    assert {j.metric: j.verdict for j in judged if j.metric in (TPS, P50)} == {
        TPS: PerfVerdict.REGRESSED, P50: PerfVerdict.REGRESSED}


def test_the_planted_slow_path_fails_on_a_slow_host_too() -> None:
    # the torch attention path: the device's step itself slower, on a host as slow as above
    planted = {TPS: 10263.5, P50: 7.9, FRACTION: 0.1166, DEVICE: 7.2, PROBE: SLOW_RUN[PROBE]}
    assert slow_verdicts(planted) == {TPS: PerfVerdict.REGRESSED, P50: PerfVerdict.REGRESSED,
                                      FRACTION: PerfVerdict.REGRESSED}  # fmt: skip


def test_the_larger_of_a_wait_and_a_slow_host_is_taken_not_both() -> None:
    both = host_loss({**SLOW_RUN, "host_wait_fraction": 0.08}, SLOW_BASELINES)
    slow_only = host_loss(SLOW_RUN, SLOW_BASELINES)
    waited_only = host_loss({"host_wait_fraction": 0.08}, SLOW_BASELINES)
    assert both == slow_only and slow_only is not None and waited_only is not None
    assert slow_only.share == pytest.approx((3.797 - 2.66) / 3.797 * (1 - 65.0 / 147.3))
    assert waited_only.share == 0.08 < slow_only.share


def test_the_probe_times_the_same_work_every_time() -> None:
    times = sorted(probe_ms() for _ in range(5))
    assert times[0] > 0 and times[2] < 10 * times[0]  # generous: a loaded 2-core box may stall one of them
