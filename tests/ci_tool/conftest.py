"""Shared by the ci_tool tests: real faults in a real history file (`damage_page`), and isolation.

ci-tool's own tests never see the caller's ci-tool, CI or pytest settings.

Every variable ci-tool reads (or sets for the pytest processes it starts), and every variable that changes
how those pytest processes behave, is removed from the environment from the start of each test's set-up to
the end of its teardown: the test, its fixtures (session and module fixtures too, which start before any
function fixture) and the processes they start see none of them. A hook and not an autouse fixture, for
that reason. The workload tests (tests/kvengine, tests/perf) keep them: they run inside ci-tool stages and
read their stage's variables (CI_TOOL_PERF_GATE) by design.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Generator
from pathlib import Path

import pytest

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
