"""Plan one stage run without running anything: query, render, shard, and which tests run alone.

    query   = stage-name facts over this machine's sysinfo          (ci_tool.stages.query)
    render  = the context's lines matching the query                 (ci_tool.testdb.select)
    shard   = this stage's share of the render by recorded durations (ci_tool.stages.shard)
    isolate = the shard's ISOLATION lines, each run in its own pytest process

Perf-mode stages are not sharded and do no ISOLATION handling (the mode policy says so). Waives are
applied by the pytest plugin, so a plan names the waives file rather than editing the list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ci_tool.stages.durations import Durations
from ci_tool.stages.names import StageName
from ci_tool.stages.query import QueryValue, render_query
from ci_tool.stages.shard import plan_shards
from ci_tool.testdb.lines import TestLine
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.select import normalize_query, render


@dataclass(frozen=True)
class StagePlan:
    """Everything a stage run needs, decided before any process starts."""

    stage: str
    context: str
    query: Mapping[str, str | None]
    rendered: tuple[TestLine, ...]  # the whole render of the context
    lines: tuple[TestLine, ...]  # the lines this stage runs (its shard), in list order
    isolated: tuple[TestLine, ...]  # the subset of `lines` run one per process
    shard: int | None  # 1-based; None when the whole render runs
    shards: int
    pytest_args: tuple[str, ...]  # the mode's options (perf mode)
    waives_file: str | None
    predicted_seconds: float | None = None

    @property
    def regular(self) -> tuple[TestLine, ...]:
        isolated = set(self.isolated)
        return tuple(line for line in self.lines if line not in isolated)


def plan_stage(
    stage: StageName,
    *,
    db: TestDb,
    context: str,
    splits: int,
    sysinfo: Mapping[str, QueryValue] | None,
    durations: Durations,
    waives_file: str | None,
    arch: str = "x86_64",
    gpu: str | None = None,
) -> StagePlan:
    """The plan of `stage`: shard K of `splits` for a stage name ending in K; a family name runs the
    whole render."""
    query = normalize_query(render_query(stage, sysinfo, arch=arch, gpu=gpu))
    rendered = tuple(render(db, context, query))
    policy = stage.policy
    sharded = policy.sharded and stage.shard is not None and splits > 1
    lines, predicted = rendered, None
    if sharded and stage.shard is not None:
        by_id: dict[str, TestLine] = {}
        for line in rendered:
            by_id.setdefault(line.test_id, line)  # a repeated id runs once (`testdb check` flags it)
        isolated_ids = [line.test_id for line in rendered if line.isolation]
        chosen = plan_shards(list(by_id), durations, splits=splits, isolated=isolated_ids).shard(stage.shard)
        lines, predicted = tuple(by_id[test_id] for test_id in chosen.test_ids), chosen.predicted_seconds
    isolated = tuple(line for line in lines if line.isolation) if policy.sharded else ()
    return StagePlan(
        stage=stage.name,
        context=context,
        query=query,
        rendered=rendered,
        lines=lines,
        isolated=isolated,
        shard=stage.shard if sharded else None,
        shards=splits if sharded else 1,
        pytest_args=policy.pytest_args,
        waives_file=waives_file,
        predicted_seconds=predicted,
    )
