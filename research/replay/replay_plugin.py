"""pytest plugin of the replay bench's runs (mutation_replay_bench.py) in the tree of an old commit.

The tests of an old commit import that commit's ci_tool (tests/perf reads ci_tool.perf), so this checkout's
ci_tool cannot be on their path; yet the touch records and the likelihood order are this checkout's plugins
(ci_tool/run/touch_recorder.py, ci_tool/run/order.py). This plugin loads those two from REPLAY_TOOL_ROOT and then
forgets this checkout's ci_tool modules (the plugins keep what they imported), so what the tests import
later is their own commit's. It also writes each test's node id into pytest's JUnit file (a `nodeid`
property, as ci-tool's own JUnit does), since pytest's classname and name do not keep it.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

import pytest


def _is_tool(name: str) -> bool:
    return name == "ci_tool" or name.startswith("ci_tool.")


def _load_tool_plugins() -> tuple[ModuleType, ModuleType]:
    root = os.environ["REPLAY_TOOL_ROOT"]
    theirs = {name: sys.modules.pop(name) for name in [name for name in sys.modules if _is_tool(name)]}
    sys.path.insert(0, root)
    try:
        from ci_tool.run import order, touch_recorder
    finally:
        sys.path.remove(root)
        for name in [name for name in sys.modules if _is_tool(name)]:
            del sys.modules[name]
        sys.modules.update(theirs)
    return order, touch_recorder


_order, _touch_recorder = _load_tool_plugins()


def pytest_addoption(parser: pytest.Parser) -> None:
    _touch_recorder.pytest_addoption(parser)
    _order.pytest_addoption(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _touch_recorder.pytest_configure(config)
    _order.pytest_configure(config)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.user_properties.append(("nodeid", item.nodeid))
