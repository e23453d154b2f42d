"""A planted, sized slowdown: $KVENGINE_EXTRA_STEP_COST repeats a fraction of each decode step's layers.

The perf gate's detection runs need a real slowdown of a known size, not the slower attention path (35-83 %).
`KVENGINE_EXTRA_STEP_COST=0.10` makes the decoder run about a tenth of its layers twice per step: the same
projections and paged attention over the same pools, in the same dtype and on the same device, their result
dropped and nothing written (the step's outputs and the KV cache stay exactly as without it). Being part of
the step, the extra work is captured in the CUDA graphs and scales with batch and context like the step.
A sleep would not do: the GPU would not pay it, and a graph replay hides the host side.

The unit is a whole layer, so the fraction is rounded to layers, spread over the layer kinds in proportion
(a Gemma-like 5:1 sliding/full model repeats 5 sliding and 1 full layer of 60 at 0.10):

    repeated = round(fraction x layers), apportioned to each kind (spec, life cycle) by largest remainder,
               and within a kind spread evenly over its layers

Unset, empty or 0 is off (the default). A fraction that rounds to no layer is an error, never a silent no-op.
This module is the one place the variable is read; it is bookkeeping only (no torch).
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from kvengine.errors import ConfigError

ENV_VAR = "KVENGINE_EXTRA_STEP_COST"


@dataclass(frozen=True)
class ExtraStepCost:
    """The asked fraction and the layers repeated each decode step (none: off)."""

    fraction: float
    repeated_layers: tuple[int, ...]
    num_layers: int

    @property
    def layer_fraction(self) -> float:
        """The share of the layer work added: the asked fraction after rounding to whole layers."""
        return len(self.repeated_layers) / self.num_layers if self.num_layers else 0.0

    def describe(self) -> str:
        return (f"{ENV_VAR}={self.fraction:g}: repeating {len(self.repeated_layers)} of {self.num_layers} layers "
                f"each decode step ({self.layer_fraction:.1%} more layer work)")  # fmt: skip


def extra_step_cost_from_env(environ: Mapping[str, str] = os.environ) -> float:
    """The fraction $KVENGINE_EXTRA_STEP_COST asks for (0.0 when unset or empty)."""
    text = environ.get(ENV_VAR, "").strip()
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(_expected(repr(text)), hint=_HINT) from None
    return check_fraction(value, found=repr(text))


def check_fraction(value: float, *, found: str | None = None) -> float:
    """`value` when it is a fraction 0..1, else the one-line error naming the variable."""
    if not 0.0 <= value <= 1.0:  # NaN fails this too
        raise ConfigError(_expected(found or repr(value)), hint=_HINT)
    return value


_HINT = "unset it for no extra cost, or give e.g. 0.10 for about 10 % more work per step"


def _expected(found: str) -> str:
    return f"{ENV_VAR} must be a fraction 0..1 of a decode step's work, found {found}."


def plan_extra_cost(fraction: float, layer_kinds: Sequence[Hashable]) -> ExtraStepCost:
    """Which layers to repeat for `fraction` of the layer work; `layer_kinds[i]` is layer i's kind."""
    check_fraction(fraction)
    num_layers = len(layer_kinds)
    wanted = math.floor(fraction * num_layers + 0.5)
    if fraction > 0 and wanted == 0:
        raise ConfigError(
            f"{ENV_VAR}={fraction:g} rounds to no layer of a {num_layers}-layer model (the extra cost repeats "
            f"whole layers).",
            hint=f"give at least {0.5 / num_layers:.3g} (half a layer) or unset it",
        )
    members: dict[Hashable, list[int]] = {}
    for layer_id, kind in enumerate(layer_kinds):
        members.setdefault(kind, []).append(layer_id)
    repeated: list[int] = []
    for kind_layers, count in zip(members.values(), _apportion(wanted, [len(m) for m in members.values()]),
                                  strict=True):  # fmt: skip
        repeated += [kind_layers[math.floor((j + 0.5) * len(kind_layers) / count)] for j in range(count)]
    return ExtraStepCost(fraction, tuple(sorted(repeated)), num_layers)


def _apportion(total: int, sizes: list[int]) -> list[int]:
    """`total` split over groups in proportion to `sizes` (largest remainder; ties to the earlier group)."""
    whole = sum(sizes)
    quotas = [total * size / whole for size in sizes]
    counts = [math.floor(q) for q in quotas]
    by_remainder = sorted(range(len(sizes)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for index in by_remainder[: total - sum(counts)]:
        counts[index] += 1
    return counts
