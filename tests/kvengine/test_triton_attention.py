"""The Triton paged-decode kernel against the dense reference on CPU, through Triton's interpreter (a real
pytest-free process with TRITON_INTERPRET=1, which must be set before Triton compiles anything); on a GPU,
test_attention.py's cuda cases run the compiled kernel."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")
ROOT = Path(__file__).resolve().parents[2]


def test_triton_kernel_matches_dense_attention_in_the_interpreter() -> None:
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"}
    result = subprocess.run([sys.executable, str(Path(__file__).with_name("triton_check.py"))], capture_output=True,
                            text=True, env=env, timeout=300, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(" ok") == 10, result.stdout
