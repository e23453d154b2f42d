"""A case's rounds summarised, pure: the median and a robust noise estimate of each metric.

    rounds 5.1 5.3 5.2 9.0 5.2  ->  median 5.2, noise 1.4826 * MAD = 1.4826 * 0.1 = 0.148

The median absolute deviation ignores one stray round (a context switch, a page fault) where a standard
deviation would be pulled by it; 1.4826 scales it to a standard deviation on normal data, so noise reads as
"one sigma". One round has no spread: its noise is 0 and the gate falls back to the threshold alone.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MAD_TO_SIGMA = 1.4826


@dataclass(frozen=True)
class Summary:
    median: float
    noise: float  # 1.4826 * MAD, in the metric's unit
    rounds: int


def robust_noise(samples: Sequence[float]) -> float:
    """1.4826 * the median absolute deviation; 0 for fewer than two samples."""
    if len(samples) < 2:
        return 0.0
    centre = statistics.median(samples)
    return MAD_TO_SIGMA * statistics.median(abs(x - centre) for x in samples)


def summarize(samples: Sequence[float]) -> Summary:
    if not samples:
        raise ValueError("summarize() needs at least one round")  # a harness bug, never user input
    return Summary(statistics.median(samples), robust_noise(samples), len(samples))


def summarize_rounds(rounds: Sequence[dict[str, float]]) -> dict[str, Summary]:
    """Each metric of the rounds (every round records the same names, in the first round's order)."""
    return {name: summarize([r[name] for r in rounds if name in r]) for name in rounds[0]} if rounds else {}
