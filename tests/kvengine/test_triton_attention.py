"""The Triton kernels and the fused decode step against the dense reference on CPU, through Triton's
interpreter: one real process with TRITON_INTERPRET=1 (it must be set before Triton compiles anything) runs
every check of triton_check.py, and each check is one test here. On a GPU, test_attention.py's and
test_fused_step.py's cuda cases run the compiled kernels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")
from tests.kvengine.triton_check import CHECKS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def interpreted() -> dict[str, str]:
    """Each check's line, by name, from one interpreter run of them all (about a minute on 2 cores)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"}
    env.pop("KVENGINE_ATTENTION", None)  # the checks pick their paths themselves
    result = subprocess.run([sys.executable, str(Path(__file__).with_name("triton_check.py"))], capture_output=True,
                            text=True, env=env, timeout=900, check=False)  # fmt: skip
    found = (line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    lines = {name: text for name, text in found if name in CHECKS}
    assert result.returncode in (0, 1) and len(lines) == len(CHECKS), result.stdout + result.stderr
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CHECKS))
def test_the_interpreted_kernel_check_passes(interpreted: dict[str, str], name: str) -> None:
    assert interpreted[name].endswith(" ok"), f"{name}: {interpreted[name]}"
