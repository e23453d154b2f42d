"""The replay bench's `--quick` repository (mutation_replay_bench.py): two commits of a tiny engine, made in a
temporary folder, whose faults have known answers, so a test pins the bench's counting in a few seconds.

    base    src/kvengine/pool.py: fits, take, label; tests/kvengine/test_pool.py: each in a test, label only
            in a process the test starts with an environment of its own (a touch record does not see it:
            ci_tool/run/touch_recorder.py); a CPU family and a GPU family (whose tests never run here)
    change  take gains a guard, label a short path: two functions' bodies, no test changes

So the touched rule runs test_take (at both grains; the file grain adds the fits tests) and misses every
fault of label that the full set catches.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

_CATALOG = """version: 1
change_rules:
  tests: [tests/]
  docs: [docs/, '*.md']
  out_of_scope: [test-db/.test_durations, bench/]
families:
- {name: CPU-Generic, platform: cpu, context: l0_cpu, splits: 1}
- {name: DGX_H100-PyTorch, platform: dgx-h100-x1, context: l0_gpu, splits: 1}
"""
_CPU_LIST = """version: 0.0.1
l0_cpu:
- condition:
    terms: {stage: pre_merge}
  tests:
  - tests/kvengine -m "not gpu"
"""
_GPU_LIST = """version: 0.0.1
l0_gpu:
- condition:
    terms: {stage: pre_merge}
  tests:
  - tests/kvengine -m "gpu"
"""
_DURATIONS = '{"tests/kvengine/test_pool.py::test_gpu_path": 600.0}\n'
_PYPROJECT = """[tool.pytest.ini_options]
markers = ["gpu: needs a GPU"]
"""
_POOL = """def fits(need, free):
    return need <= free


def take(items, count):
    taken = []
    for index in range(count):
        taken.append(items[index])
    return taken


def label(name, width):
    return name.upper().ljust(width, ".")
"""
_POOL_CHANGED = """def fits(need, free):
    return need <= free


def take(items, count):
    if count > len(items):
        raise ValueError(f"only {len(items)} items")
    taken = []
    for index in range(count):
        taken.append(items[index])
    return taken


def label(name, width):
    if width < len(name):
        return name.upper()
    return name.upper().ljust(width, ".")
"""
_TESTS = """import os
import subprocess
import sys

import pytest

from kvengine.pool import fits, take


def test_fits_exactly():
    assert fits(2, 2)


def test_does_not_fit():
    assert not fits(3, 2)


def test_take():
    assert take([1, 2, 3], 2) == [1, 2]


def test_label_in_a_process_of_its_own():
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ["PYTHONPATH"]}
    code = "from kvengine.pool import label; print(label('ab', 4), label('abc', 2))"
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    assert done.stdout == "AB.. ABC\\n"


@pytest.mark.gpu
def test_gpu_path():
    pytest.skip("needs a GPU")
"""


def build(folder: Path) -> Path:
    """The repository in `folder` (created): the base commit, then the change."""
    files = {
        "jenkins/stages.yml": _CATALOG,
        "test-db/l0_cpu.yml": _CPU_LIST,
        "test-db/l0_gpu.yml": _GPU_LIST,
        "test-db/.test_durations": _DURATIONS,
        "pyproject.toml": _PYPROJECT,
        "src/kvengine/__init__.py": "",
        "src/kvengine/pool.py": _POOL,
        "tests/kvengine/test_pool.py": _TESTS,
    }
    for path, text in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    _git(folder, "init", "-q", "-b", "main")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-q", "-m", "kvengine: fits, take and label")
    (folder / "src/kvengine/pool.py").write_text(_POOL_CHANGED, encoding="utf-8")
    _git(folder, "commit", "-q", "-am", "kvengine: take checks its count, label keeps a long name")
    return folder


def _git(folder: Path, *args: str) -> None:
    identity = ("-c", "user.name=replay", "-c", "user.email=replay@localhost", "-c", "commit.gpgsign=false")
    subprocess.run(["git", *identity, *args], cwd=folder, check=True, capture_output=True)
