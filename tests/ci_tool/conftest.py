"""ci-tool's own tests never see the caller's ci-tool, CI or pytest settings.

Every variable ci-tool reads (or sets for the pytest processes it starts), and every variable that changes
how those pytest processes behave, is removed from the environment from the start of each test's set-up to
the end of its teardown: the test, its fixtures (session and module fixtures too, which start before any
function fixture) and the processes they start see none of them. A hook and not an autouse fixture, for
that reason. The workload tests (tests/kvengine, tests/perf) keep them: they run inside ci-tool stages and
read their stage's variables (CI_TOOL_PERF_GATE) by design.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

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
