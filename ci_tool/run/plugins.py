"""The modules ci-tool's runner names on the command lines it starts: its pytest plugins (`-p`) and the
launcher of a multi-node stage (`python -m`). What they load runs in every test process of every stage,
whatever its list, so run/importers.py counts a module they reach as reaching every test."""

from __future__ import annotations

TEST_LIST_PLUGIN = "ci_tool.run.plugin"  # always
ORDER_PLUGIN = "ci_tool.run.order"  # a stage with a priority (the default)
TOUCH_PLUGIN = "ci_tool.run.touches"  # a touch-recording run
RANKS_LAUNCHER = "ci_tool.run.ranks"  # each node of a multi-node stage

RUNNER_MODULES = (TEST_LIST_PLUGIN, ORDER_PLUGIN, TOUCH_PLUGIN, RANKS_LAUNCHER)
