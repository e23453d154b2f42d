"""The modules ci-tool's runner loads into every test process of a stage it starts, whatever the stage's list:
its test-list and order plugins (`pytest -p`) and the launcher of a multi-node stage (`python -m`).
run/importers.py counts a module they reach as reaching every test.

The touch plugin (run/touches.py) is not among them: CI records in post-merge runs, which run everything; a
local run that narrows and records too loads it, and a fault there fails every stage of that run out loud,
whatever was selected. Its name stays in its own module, since a module that spells another's dotted name
counts as loading it.
"""

from __future__ import annotations

TEST_LIST_PLUGIN = "ci_tool.run.plugin"
ORDER_PLUGIN = "ci_tool.run.order"
RANKS_LAUNCHER = "ci_tool.run.ranks"

RUNNER_MODULES = (TEST_LIST_PLUGIN, ORDER_PLUGIN, RANKS_LAUNCHER)
