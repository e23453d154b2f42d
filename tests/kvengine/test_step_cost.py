"""$KVENGINE_EXTRA_STEP_COST: parsed and refused in one place, sized in whole layers, real work each step
that leaves the step's outputs and the KV cache untouched (no timing here: bench/extra_step_cost_bench.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions, Sequence
from kvengine.errors import ConfigError
from kvengine.loader import load_preset
from kvengine.spec import ModelSpec
from kvengine.step_cost import ENV_VAR, extra_step_cost_from_env, plan_extra_cost

GEMMA_KINDS = (["sliding"] * 5 + ["full"]) * 10
# tiny_hybrid's layers: the per-op step multiplies q, k, v and the output apart; the fused step (Triton on a
# GPU) does one QKV GEMM and the output GEMM (an addmm into the residual; a repeated layer's is a plain mm)
GEMMS_PER_LAYER = {False: 4, True: 2}  # keyed by TinyDecoder.fused
GEMM_OPS = ("aten::mm", "aten::addmm_")  # the profiler's names: a plain product, the in-place accumulation
DecodeSteps = Callable[..., list[torch.Tensor]]  # the `decode_steps` fixture (tests/kvengine/conftest.py)
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize(
    ("text", "fraction"),
    [
        pytest.param(None, 0.0, id="unset-is-off"),
        pytest.param("", 0.0, id="empty-is-off"),
        pytest.param("0", 0.0, id="zero-is-off"),
        pytest.param("0.10", 0.10, id="ten-percent"),
        pytest.param(" 0.03 ", 0.03, id="spaces-around"),
        pytest.param("1", 1.0, id="whole-step-again"),
    ],
)
def test_the_variable_parses_to_a_fraction(text: str | None, fraction: float) -> None:
    assert extra_step_cost_from_env({} if text is None else {ENV_VAR: text}) == fraction


@pytest.mark.parametrize(
    ("text", "found"),
    [
        pytest.param("ten", "'ten'", id="not-a-number"),
        pytest.param("10%", "'10%'", id="percent-sign"),
        pytest.param("10", "'10'", id="percent-as-number"),
        pytest.param("1.5", "'1.5'", id="above-one"),
        pytest.param("-0.1", "'-0.1'", id="negative"),
        pytest.param("nan", "'nan'", id="nan"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(text: str, found: str) -> None:
    with pytest.raises(ConfigError) as info:
        extra_step_cost_from_env({ENV_VAR: text})
    assert str(info.value) == (
        f"KVENGINE_EXTRA_STEP_COST must be a fraction 0..1 of a decode step's work, found {found}. "
        "Hint: unset it for no extra cost, or give e.g. 0.10 for about 10 % more work per step"
    )


@pytest.mark.parametrize(
    ("fraction", "kinds", "repeated"),
    [
        pytest.param(0.0, ["full"] * 32, (), id="off"),
        pytest.param(0.10, ["full"] * 32, (5, 16, 26), id="llama-like-3-of-32"),
        pytest.param(0.03, ["full"] * 32, (16,), id="llama-like-1-of-32"),
        pytest.param(0.10, GEMMA_KINDS, (6, 18, 30, 35, 42, 54), id="gemma-like-5-sliding-1-full"),
        pytest.param(0.03, GEMMA_KINDS, (14, 44), id="gemma-like-2-sliding"),
        pytest.param(0.10, ["wide-window", "compressed"] * 30, (10, 11, 30, 31, 50, 51), id="deepseek-like-3-and-3"),
        pytest.param(1.0, ["a", "b", "b"], (0, 1, 2), id="every-layer"),
    ],
)
def test_the_fraction_is_rounded_to_layers_spread_over_their_kinds(
    fraction: float, kinds: list[str], repeated: tuple[int, ...]
) -> None:
    assert plan_extra_cost(fraction, kinds).repeated_layers == repeated


def test_a_fraction_below_half_a_layer_is_an_error_not_a_silent_no_op() -> None:
    with pytest.raises(ConfigError) as info:
        plan_extra_cost(0.1, ["full"] * 4)
    assert str(info.value) == (
        "KVENGINE_EXTRA_STEP_COST=0.1 rounds to no layer of a 4-layer model (the extra cost repeats whole "
        "layers). Hint: give at least 0.125 (half a layer) or unset it"
    )


def _engine(spec: ModelSpec, *, graphs: bool = True, extra: float | None = None, device: str = "cpu") -> DecodeEngine:
    options = EngineOptions(device=device, budget_bytes=1 << 22, max_context_tokens=64, use_cuda_graphs=graphs,
                            hidden_size=16, vocab_size=64, extra_step_cost=extra)  # fmt: skip
    return DecodeEngine(spec, KvCacheConfig(tokens_per_block=4, grain_bytes=1), options)


def test_the_engine_reads_the_variable_when_its_options_leave_it_unset(
    tiny_hybrid_spec: ModelSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_VAR, "0.5")
    engine = _engine(tiny_hybrid_spec)
    assert engine.extra_cost.repeated_layers == (0, 2) and engine.model.repeated_layers == {0, 2}
    assert _engine(tiny_hybrid_spec, extra=0.0).extra_cost.repeated_layers == ()  # options win over the variable
    monkeypatch.setenv(ENV_VAR, "half")
    with pytest.raises(ConfigError, match=r"^KVENGINE_EXTRA_STEP_COST must be a fraction 0\.\.1 .* found 'half'\."):
        _engine(tiny_hybrid_spec)


def test_a_bad_option_value_gets_the_same_message(tiny_hybrid_spec: ModelSpec) -> None:
    with pytest.raises(ConfigError, match=r"^KVENGINE_EXTRA_STEP_COST must be a fraction 0\.\.1 .* found 1\.5\."):
        _engine(tiny_hybrid_spec, extra=1.5)


def _ops_per_step(engine: DecodeEngine, sequences: list[Sequence], steps: int) -> list[Counter[str]]:
    """The aten ops each decode step dispatched (matrix products, attention, KV writes)."""
    counted = []
    for step in range(steps):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            out = engine.step(sequences, torch.full((len(sequences),), step, dtype=torch.int64))
        assert out is not None
        counted.append(Counter({e.key: e.count for e in prof.key_averages()
                                if e.key in ("aten::mm", "aten::scaled_dot_product_attention", "aten::index_put_")}))
    return counted


@pytest.mark.parametrize("graphs", [pytest.param(True, id="graph-path"), pytest.param(False, id="eager")])
@pytest.mark.parametrize(
    ("fraction", "repeated"),
    [pytest.param(0.25, 1, id="quarter"), pytest.param(0.5, 2, id="half"), pytest.param(1.0, 4, id="all")],
)
def test_each_step_repeats_its_layers_work_and_writes_no_kv(
    tiny_hybrid_spec: ModelSpec, graphs: bool, fraction: float, repeated: int
) -> None:
    plain, slowed = _engine(tiny_hybrid_spec, graphs=graphs), _engine(tiny_hybrid_spec, graphs=graphs, extra=fraction)
    assert len(slowed.extra_cost.repeated_layers) == repeated
    counts = {}
    for name, engine in {"plain": plain, "slowed": slowed}.items():
        sequences = [engine.add_sequence(context_tokens=5) for _ in range(3)]
        counts[name] = _ops_per_step(engine, sequences, 3)  # type: ignore[arg-type]
    extra_per_step = [
        {op: slowed_step[op] - plain_step[op] for op in plain_step | slowed_step}
        for plain_step, slowed_step in zip(counts["plain"], counts["slowed"], strict=True)
    ]
    mm = GEMMS_PER_LAYER[plain.model.fused] * repeated
    once = {"aten::mm": mm, "aten::scaled_dot_product_attention": repeated, "aten::index_put_": 0}
    assert extra_per_step == [once] * 3


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fraction", [pytest.param(0.5, id="half"), pytest.param(1.0, id="all")])
def test_the_extra_work_leaves_outputs_and_the_kv_cache_unchanged(
    tiny_hybrid_spec: ModelSpec, decode_steps: DecodeSteps, device: str, fraction: float
) -> None:
    plain = _engine(tiny_hybrid_spec, device=device)
    slowed = _engine(tiny_hybrid_spec, device=device, extra=fraction)
    assert slowed.extra_cost.repeated_layers and slowed.metrics().captured_sizes == plain.metrics().captured_sizes
    engines = {"slowed": slowed, "plain": plain}
    hidden = {name: torch.stack(decode_steps(engine, 5, 12)) for name, engine in engines.items()}
    layers = range(len(tiny_hybrid_spec.layers))
    kv = {name: [pool for i in layers for pool in engine.pools.layer_kv(i)] for name, engine in engines.items()}
    # bit for bit on CPU; two CUDA graphs need not pick the same GEMM algorithms, so float32's own tolerance there
    exact = {"atol": 0.0, "rtol": 0.0} if device == "cpu" else {}
    torch.testing.assert_close(hidden["slowed"], hidden["plain"], **exact)
    torch.testing.assert_close(kv["slowed"], kv["plain"], **exact)


@pytest.mark.parametrize(
    ("preset", "fraction", "repeated"),
    [
        pytest.param("llama-like", 0.10, 3, id="llama-0.10"),
        pytest.param("gemma-like", 0.10, 6, id="gemma-0.10"),
        pytest.param("deepseek-v4-like", 0.03, 2, id="deepseek-0.03"),
    ],
)
def test_the_presets_repeat_whole_layers_near_the_fraction(preset: str, fraction: float, repeated: int) -> None:
    spec = load_preset(preset)
    kinds = list(spec.layers)
    planned = plan_extra_cost(fraction, kinds)
    assert len(planned.repeated_layers) == repeated
    assert abs(planned.layer_fraction - fraction) <= 0.5 / len(spec.layers)


@pytest.mark.parametrize("device", DEVICES)
def test_the_warm_up_captures_the_extra_work(tiny_hybrid_spec: ModelSpec, device: str) -> None:
    """On CUDA a graph replays what its capture dispatched: each captured step holds the repeated layers."""
    matmuls = {}
    for name, extra in {"plain": 0.0, "slowed": 0.5}.items():
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            engine = _engine(tiny_hybrid_spec, device=device, extra=extra)
        matmuls[name] = sum(e.count for e in prof.key_averages() if e.key in GEMM_OPS)
    assert engine.metrics().captured_sizes == (1, 2, 4, 8)
    per_layer = GEMMS_PER_LAYER[engine.model.fused]
    per_step = per_layer * len(tiny_hybrid_spec.layers) + 1  # the layers' projections and the logits
    steps, rest = divmod(matmuls["plain"], per_step)
    assert (rest, matmuls["slowed"]) == (0, steps * (per_step + 2 * per_layer))
    assert steps >= 4  # at least one step per captured size
