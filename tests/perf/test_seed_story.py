"""The seed's story: forcing the old default sizing (typical length = max_seq_len) on the Gemma-like
config fails the perf gate, default sizing passes.

Each side is a real pytest run of test_perf_sanity.py on a copy of tests/scripts/perf-sanity/gemma_like.yaml
(avg_seq_len left unset, or set to max_seq_len, 32768), with its own history. On CPU the coverage part
decides: at the client's CPU sizes the starved window pool cannot capture the 72 graph, the batch of 66
runs eager, and the case requires graphs. On a GPU (the `gpu` case) the old sizing is also slower, read back
from the history.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.perf_cases import own_run_environment

pytestmark = pytest.mark.timed  # it measures time: a touch-recording run leaves it unmeasured

ROOT = Path(__file__).resolve().parents[2]
GEMMA = ROOT / "tests/scripts/perf-sanity/gemma_like.yaml"
MODES = [pytest.param("cpu", id="cpu"), pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)]


Ran = tuple[subprocess.CompletedProcess[str], dict[str, float]]


def run_case(tmp_path: Path, mode: str, *, old_default: bool) -> Ran:
    label = "old" if old_default else "default"
    configs = tmp_path / label
    configs.mkdir(parents=True)
    text = GEMMA.read_text(encoding="utf-8")
    if old_default:
        text = text.replace("avg_seq_len: null", "avg_seq_len: 32768")
    (configs / "gemma_like.yaml").write_text(text, encoding="utf-8")
    history = tmp_path / f"{label}.sqlite"
    # its own run with its own history: not the stage's that may run this test
    env = own_run_environment(CI_TOOL_PERF_CONFIGS=str(configs), CI_TOOL_HISTORY=str(history),
                              CI_TOOL_PERF_GATE="fail", CI_TOOL_STAGE="", CI_TOOL_RUN_ID=f"seed-{label}")  # fmt: skip
    node = f"tests/perf/test_perf_sanity.py::test_e2e[{mode}-gemma_like-pool4g-b80]"
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    with sqlite3.connect(history) as db:
        values = dict(db.execute("SELECT metric, value FROM perf_results").fetchall())
    return result, values


@pytest.mark.parametrize("mode", MODES)
def test_default_sizing_passes_the_gate(tmp_path: Path, mode: str) -> None:
    result, values = run_case(tmp_path, mode, old_default=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert values["graph_coverage"] == 1.0 and values["eager_steps"] == 0


@pytest.mark.parametrize("mode", MODES)
def test_the_old_default_sizing_fails_the_gate(tmp_path: Path, mode: str) -> None:
    result, values = run_case(tmp_path, mode, old_default=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{mode}-gemma_like-pool4g-b80 on " in result.stdout, result.stdout
    assert "lost CUDA-graph coverage: " in result.stdout and " step(s) eager" in result.stdout, result.stdout
    assert values["graph_coverage"] < 1.0 and values["eager_steps"] > 0
    if mode == "gpu":  # in full: the eager batch is slower than the graphed one
        _, default = run_case(tmp_path / "again", mode, old_default=False)
        assert values["decode_tokens_per_s"] < default["decode_tokens_per_s"]
