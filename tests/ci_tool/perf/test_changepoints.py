"""E-Divisive means on recorded and synthetic series (no timing): steps found at the right index, flat noisy
series find none, the statistic equals its definition, the answer is the same every time."""

from __future__ import annotations

import itertools
import random
import statistics

import pytest

from ci_tool.perf.changepoints import MIN_SEGMENT, best_split, change_points


def _noisy(seed: int, *levels: tuple[float, int], sigma: float) -> list[float]:
    rng = random.Random(seed)
    return [level + rng.gauss(0, sigma) for level, count in levels for _ in range(count)]


# decode_tokens_per_s of gpu-gemma_like-pool4g-b80 as an H200 recorded it, post-merge, one value per run (the
# medians of 5 rounds); the engine went onto its slower attention path at run 9 and back at run 15.
RECORDED_TPS = [15060.0, 15010.0, 15110.0, 14980.0, 15090.0, 15040.0, 14950.0, 15070.0, 15020.0,
                13560.0, 13490.0, 13610.0, 13530.0, 13580.0, 13500.0,
                15030.0, 15080.0, 14990.0, 15050.0, 15010.0]  # fmt: skip
# the same case on a loaded host: no change, a few runs 10-13 % low (the launches stalled)
RECORDED_NOISY = [15060.0, 13090.0, 15110.0, 14980.0, 13300.0, 15040.0, 14950.0, 15070.0, 15020.0, 13200.0,
                  15090.0, 14990.0, 15040.0, 13150.0, 15000.0, 15060.0]  # fmt: skip


@pytest.mark.parametrize(
    ("values", "indices"),
    [
        pytest.param(_noisy(1, (100.0, 20), (90.0, 20), sigma=2.0), [20], id="one-step-down"),
        pytest.param(_noisy(2, (5.0, 12), (5.6, 30), sigma=0.1), [12], id="latency-step-up"),
        pytest.param(_noisy(3, (100.0, 15), (110.0, 15), (100.0, 15), sigma=2.0), [15, 30], id="up-and-back"),
        pytest.param(_noisy(4, (100.0, 8), (80.0, 4), sigma=1.0), [8], id="step-near-the-end"),
        pytest.param(RECORDED_TPS, [9, 15], id="recorded-slower-path-and-back"),
        pytest.param(_noisy(5, (100.0, 60), sigma=3.0), [], id="flat-noisy"),
        pytest.param(_noisy(6, (100.0, 200), sigma=5.0), [], id="flat-noisy-long"),
        pytest.param(RECORDED_NOISY, [], id="recorded-loaded-host-no-change"),
        pytest.param([1.0, 2.0, 3.0, 4.0, 5.0], [], id="too-short"),
        pytest.param([7.0] * 30, [], id="constant"),
    ],
)
def test_change_points_are_found_where_the_level_moves(values: list[float], indices: list[int]) -> None:
    assert [c.index for c in change_points(values)] == indices


def test_a_change_point_names_the_medians_either_side() -> None:
    [down, up] = change_points(RECORDED_TPS)
    assert (down.before, down.after, round(down.relative_change, 4)) == (15040.0, 13545.0, -0.0994)
    assert (up.before, up.after) == (13545.0, 15030.0)
    assert down.p_value <= 0.01


def test_the_answer_is_the_same_every_time() -> None:
    values = _noisy(7, (100.0, 20), (97.0, 20), sigma=2.0)
    assert change_points(values) == change_points(list(values))


def _q_by_definition(segment: list[float], tau: int, kappa: int) -> float:
    x, y = segment[:tau], segment[tau:kappa]
    m, k = len(x), len(y)
    cross = statistics.fmean(abs(a - b) for a in x for b in y)
    within_x = statistics.fmean(abs(a - b) for a, b in itertools.combinations(x, 2))
    within_y = statistics.fmean(abs(a - b) for a, b in itertools.combinations(y, 2))
    return m * k / (m + k) * (2 * cross - within_x - within_y)


@pytest.mark.parametrize("seed", range(5), ids=[f"seed-{s}" for s in range(5)])
def test_the_incremental_statistic_equals_its_definition(seed: int) -> None:
    rng = random.Random(seed)
    segment = [rng.uniform(0, 10) for _ in range(rng.randint(2 * MIN_SEGMENT, 25))]
    n = len(segment)
    splits = [(t, k) for t in range(MIN_SEGMENT, n - MIN_SEGMENT + 1) for k in range(t + MIN_SEGMENT, n + 1)]
    tau, kappa = max(splits, key=lambda split: _q_by_definition(segment, *split))
    found = best_split(segment)
    assert found is not None and found[0] == tau
    assert found[1] == pytest.approx(_q_by_definition(segment, tau, kappa))
