"""Fixtures for runner tests: a private copy of the deliberately failing suite, and real pytest runs in it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

FAILING_SUITE = Path(__file__).parents[2] / "fixtures" / "failing_suite"

RunPytest = Callable[..., subprocess.CompletedProcess[str]]


def copy_suite(target: Path) -> Path:
    """Copy tests/fixtures/failing_suite to `target` (tests must not write into the repository)."""
    shutil.copytree(FAILING_SUITE, target)
    return target


def run_pytest_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A real pytest process in `cwd` with ci-tool's plugin loaded."""
    command = [sys.executable, "-m", "pytest", "-p", "ci_tool.run.plugin", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, timeout=120)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return copy_suite(tmp_path / "suite")


@pytest.fixture(scope="session")
def run_pytest() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_pytest(cwd, *args)`: a real pytest process with ci-tool's plugin loaded."""
    return run_pytest_in


@pytest.fixture(scope="session")
def make_suite() -> Callable[[Path], Path]:
    """`make_suite(target)`: a copy of the failing suite at `target`."""
    return copy_suite
