"""Perf sanity: `test_e2e[<mode>-<config>-<server>-<client>]`, one case per server x client of each YAML
config under tests/scripts/perf-sanity/ (ci_tool.perf.config), run on the real engine.

GPU cases run with CUDA graphs and carry the `gpu` marker; CPU cases run the same code eagerly at the
client's CPU sizes. Each case's metrics go to the history and are gated by `perf_sanity` against this GPU
type's baselines; a case the gate would fail is measured again in a fresh process first, and the faster process
is judged (second_process.py). On CPU nothing here depends on speed: no CPU baselines exist, so only the graph rule
(lost coverage fails a case that requires graphs) gates, and the test checks every metric was recorded.
$CI_TOOL_PERF_CONFIGS points at another folder of configs (the seed-story tests use it).
"""

from __future__ import annotations

import pytest
import torch

from ci_tool.perf.config import Mode, PerfCase
from ci_tool.perf.fixture import PerfSanity
from tests.helpers.perf_cases import CASES
from tests.perf.engine_case import measure
from tests.perf.second_process import Kept, Measurement, keep_faster, measure_in_fresh_process

pytestmark = pytest.mark.timed  # it measures time: a touch-recording run leaves it unmeasured

RECORDED_ALWAYS = ("decode_tokens_per_s", "step_latency_p50_ms", "step_latency_p99_ms", "graph_coverage",
                   "graph_steps", "eager_steps")  # fmt: skip


@pytest.fixture
def one_cpu_thread():
    """Small CPU matmuls gain nothing from threads, and spinning threads on a shared CPU lose a lot."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.case_id, marks=[pytest.mark.gpu] if c.mode is Mode.GPU else []) for c in CASES],
)
@pytest.mark.usefixtures("one_cpu_thread")
def test_e2e(case: PerfCase, perf_sanity: PerfSanity) -> None:
    measured = measure(case)
    found, values = measured.last, measured.values
    assert measured.rounds == case.rounds.measured
    assert found.graph_steps + found.eager_steps >= case.load.output_len  # every timed step was routed
    missing = [name for name in RECORDED_ALWAYS if name not in values]
    assert not missing and any(name.startswith("pool_share_") for name in values)
    if case.mode is Mode.GPU:
        assert {"achieved_gb_per_s", "bandwidth_fraction"} <= set(values)
    first = Measurement(values, measured.noise, measured.rounds)
    kept = Kept(first, "")
    if perf_sanity.fails(case, values, noise=measured.noise):
        kept = keep_faster(first, measure_in_fresh_process(case))
    chosen = kept.measurement
    perf_sanity.report(case, chosen.values, noise=chosen.noise, rounds=chosen.rounds, remeasured=kept.note)
