"""Shared by the ci_tool tests: real faults in a real history file (`damage_page`), the deliberately
failing suite and one recorded run of it (`suite`, `fixture_run`, read by the runner and report tests),
and isolation.

ci-tool's own tests never see the caller's ci-tool, CI or pytest settings.

Every variable ci-tool reads (or sets for the pytest processes it starts), and every variable that changes
how those pytest processes behave, is removed from the environment from the start of each test's set-up to
the end of its teardown: the test, its fixtures (session and module fixtures too, which start before any
function fixture) and the processes they start see none of them. A hook and not an autouse fixture, for
that reason. The workload tests (tests/kvengine, tests/perf) keep them: they run inside ci-tool stages and
read their stage's variables (CI_TOOL_PERF_GATE) by design.
"""

from __future__ import annotations

import io
import os
import sqlite3
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_tool.history.store import HistoryStore
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage, SessionConfig, SessionResult, run_session
from ci_tool.run.stage_runner import StageResult, TestResult
from tests.helpers.failing_suite import copy_suite, planned, session_config
from tests.helpers.planner_calls import PlannerCalls, count_planner_calls

DamagePage = Callable[[Path, str], None]


def _damage_page(history: Path, table: str) -> None:
    """Write garbage over one page of a closed history: the root page of `table`, or page 1 for 'header'."""
    with sqlite3.connect(f"{history.absolute().as_uri()}?mode=ro", uri=True) as db:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        found = db.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,)).fetchone()
    db.close()
    page = 1 if table == "header" else found[0]
    with history.open("r+b") as file:
        file.seek((page - 1) * page_size)
        file.write(b"\xde\xad\xbe\xef" * (page_size // 4))


@pytest.fixture(scope="session")
def damage_page() -> DamagePage:
    """`damage_page(history, table)`: one corrupted page, as a failing disk or a killed copy leaves it."""
    return _damage_page


@pytest.fixture
def planted_store(tmp_path: Path) -> Generator[HistoryStore, None, None]:
    """A real history file holding tests/ci_tool/history/planted.py's runs (a flaky test among others)."""
    from tests.ci_tool.history.planted import plant

    with HistoryStore(tmp_path / "planted.sqlite") as store:
        plant(store)
        yield store


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return copy_suite(tmp_path / "suite")


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


@pytest.fixture
def planner_calls(monkeypatch: pytest.MonkeyPatch) -> PlannerCalls:
    """Counts every list the planner renders (testdb.select.render) and every family it splits
    (shard.plan_shards), calling the real functions."""
    return count_planner_calls(monkeypatch)


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


ISOLATED_PREFIXES = ("CI_TOOL_", "GITHUB_", "JENKINS_", "SLURM_")
ISOLATED_NAMES = frozenset(
    {
        "stageName",  # the stage name the reference's scripts read; ci-tool sets it for its pytest processes
        "PYTEST_ADDOPTS",  # these four change the real pytest processes that runner tests start
        "PYTEST_PLUGINS",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD",  # drops pytest-timeout, whose --timeout the runner passes
        "PYTEST_TIMEOUT",
    }
)
_RESTORE = pytest.StashKey[pytest.MonkeyPatch]()


def is_isolated(name: str) -> bool:
    return name.startswith(ISOLATED_PREFIXES) or name in ISOLATED_NAMES


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    patch = item.stash[_RESTORE] = pytest.MonkeyPatch()
    for name in [name for name in os.environ if is_isolated(name)]:
        patch.delenv(name)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    try:
        return (yield)
    finally:
        item.stash[_RESTORE].undo()
