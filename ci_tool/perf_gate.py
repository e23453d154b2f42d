"""The pytest side of a stage's perf gate: a `perf_gate` fixture that fails, warns or only records.

A perf-sanity test states its check once, `perf_gate(tokens_per_s >= floor, "why")`, and the stage's
mode decides what a regression does (ci_tool.stages.modes): fail in pre-merge, warn in post-merge or
FUNCTIONAL-ONLY stages, record only in functional stages. Use it from a conftest.py:

    from ci_tool.perf_gate import perf_gate  # noqa: F401  (a pytest fixture)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

import pytest

from ci_tool.stages.modes import PerfGate, perf_gate_from_env

PerfCheck = Callable[[bool, str], None]


class PerfRegressionWarning(UserWarning):
    """A perf regression in a stage whose gate only warns."""


@pytest.fixture
def perf_gate(request: pytest.FixtureRequest) -> PerfCheck:
    """`check(ok, message)`: what a failed perf check does follows the stage's gate."""
    gate = perf_gate_from_env(os.environ)

    def check(ok: bool, message: str) -> None:
        request.node.user_properties.append(("perf_gate", gate.value))
        if ok:
            return
        request.node.user_properties.append(("perf_regression", message))
        if gate is PerfGate.FAIL:
            pytest.fail(message, pytrace=False)
        warnings.warn(PerfRegressionWarning(f"{message} (perf gate: {gate.value})"), stacklevel=2)

    return check
