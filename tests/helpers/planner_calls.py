"""Counting the planner's work: every list it renders and every family it splits, the real functions called."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from ci_tool.stages import planner as planner_module
from ci_tool.stages.shard import ShardPlan
from ci_tool.testdb.lines import TestLine
from ci_tool.testdb.model import TestDb


@dataclass(frozen=True)
class PlannerCalls:
    """What the planner's render and split functions were called for, and how often."""

    renders: Counter[tuple[str, tuple[tuple[str, str | None], ...]]]  # (context, the query's items) -> calls
    splits: Counter[tuple[tuple[str, ...], int]]  # (the test ids, the shard count) -> calls

    def rendered(self, context: str) -> int:
        return sum(count for (found, _), count in self.renders.items() if found == context)


def count_planner_calls(monkeypatch: pytest.MonkeyPatch) -> PlannerCalls:
    """Counts every list the planner renders (testdb.select.render) and every family it splits
    (shard.plan_shards) until `monkeypatch` is undone, calling the real functions."""
    calls = PlannerCalls(Counter(), Counter())
    real_render, real_split = planner_module.render, planner_module.plan_shards

    def render(db: TestDb, context: str, query: Mapping[str, str | None], **options: Any) -> list[TestLine]:
        calls.renders[(context, tuple(sorted(query.items())))] += 1
        return real_render(db, context, query, **options)

    def plan_shards(test_ids: Sequence[str], *args: Any, splits: int, **options: Any) -> ShardPlan:
        calls.splits[(tuple(test_ids), splits)] += 1
        return real_split(test_ids, *args, splits=splits, **options)

    monkeypatch.setattr(planner_module, "render", render)
    monkeypatch.setattr(planner_module, "plan_shards", plan_shards)
    return calls
