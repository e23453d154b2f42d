"""Fixtures for runner tests: a private copy of the deliberately failing suite, and real pytest runs in it."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage, SessionConfig, SessionResult, catalog_stages, run_session
from ci_tool.run.stage_runner import StageResult, TestResult
from ci_tool.stages.catalog_load import open_catalog

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


@dataclass(frozen=True)
class FixtureRun:
    """One recorded run of the failing suite: CPU-Generic-1 (every failure kind), A10-PyTorch-1 (waits for
    a runner), CPU-Generic-Post-Merge-1 (green), without fail-fast."""

    root: Path
    session: SessionResult
    history: Path

    def stage(self, name: str) -> StageResult:
        return next(result for result in self.session.results if result.stage == name)

    def test(self, stage: str, nodeid: str) -> TestResult:
        return next(test for test in self.stage(stage).tests if test.first.nodeid == nodeid)


def session_config(root: Path, **overrides: object) -> SessionConfig:
    values: dict[str, object] = {
        "rootdir": root,
        "results_root": root / ".ci-tool" / "runs",
        "history": root / ".ci-tool" / "history.sqlite",
        "sysinfo": {"gpu": None, "system_gpu_count": 0},
        "flaky_signatures": load_flaky_signatures(),
    }
    values.update(overrides)
    return SessionConfig(**values)  # type: ignore[arg-type]


def planned(root: Path, names: tuple[str, ...] | None = None, *, waives: bool = True) -> list[PlannedStage]:
    """The stages of the suite's catalog (all of them, or `names`), planned on a machine without a GPU."""
    loaded = open_catalog(root / "stages.yml", root / "test-db")
    stages = [loaded.catalog.stage(name) for name in names] if names else list(loaded.catalog.stages)
    waives_file = str(root / "test-db" / "waives.txt") if waives else None
    sysinfo = {"gpu": None, "system_gpu_count": 0}
    return catalog_stages(stages, db=loaded.db, durations=loaded.durations, sysinfo=sysinfo, waives_file=waives_file)


@pytest.fixture(scope="session")
def fixture_run(tmp_path_factory: pytest.TempPathFactory) -> FixtureRun:
    root = copy_suite(tmp_path_factory.mktemp("fixture-run") / "suite")
    config = session_config(root)
    session = run_session(
        "/bot run --disable-fail-fast", planned(root), config=config, fail_fast=False, progress=Progress(io.StringIO())
    )
    return FixtureRun(root, session, config.history)


@pytest.fixture(scope="session")
def make_config() -> Callable[..., SessionConfig]:
    """`make_config(root, **overrides)`: a session config for a copy of the failing suite at `root`."""
    return session_config


@pytest.fixture(scope="session")
def make_planned() -> Callable[..., list[PlannedStage]]:
    """`make_planned(root, names=None, waives=True)`: catalog stages of a copy of the failing suite."""
    return planned
