"""A case's rounds on one engine, on CPU (no timing asserted): warm-up rounds run and are discarded, every
measured round is summarised, and the step counts cover every round."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from ci_tool.perf.config import CONFIG_DIR, Rounds, load_config
from tests.perf.engine_case import measure

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def one_cpu_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_cpu_thread")
def test_rounds_run_on_one_engine_and_are_summarised() -> None:
    [case] = [c for c in load_config(ROOT / CONFIG_DIR / "llama_like.yaml").cases if c.case_id.startswith("cpu-")]
    measured = measure(dataclasses.replace(case, rounds=Rounds(measured=3, warmup=1)))
    assert measured.rounds == 3
    assert set(measured.noise) == set(measured.values)
    assert all(noise >= 0 for noise in measured.noise.values())
    # the step counts are the engine's since it was built: 4 rounds (1 warm-up) of 2 untimed + output_len steps
    steps_per_round = 2 + case.load.output_len
    assert measured.values["graph_steps"] + measured.values["eager_steps"] == 4 * steps_per_round
    assert (measured.noise["graph_steps"], measured.noise["eager_steps"]) == (0.0, 0.0)
