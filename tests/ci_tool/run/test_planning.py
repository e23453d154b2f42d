"""Stage planning: query, render, shard, isolation; pure, on a tiny test-db."""

from __future__ import annotations

import pytest

from ci_tool.errors import TestDbError
from ci_tool.run.planning import StagePlan, plan_stage
from ci_tool.stages.names import StageName, parse_family_name, parse_stage_name
from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.model import TestDb

TEST_DB = """\
version: 0.0.1
l0_a10:
- condition:
    terms: {stage: pre_merge, backend: pytorch}
    wildcards: {gpu: '*a10*'}
  tests:
  - a.py
  - b.py ISOLATION
  - c.py TIMEOUT (5)
  - d.py
- condition:
    terms: {stage: post_merge}
  tests:
  - post.py
"""
DURATIONS = {"a.py::t": 10.0, "b.py::t": 1.0, "c.py::t": 9.0, "d.py::t": 2.0}
A10 = {"gpu": "A10", "system_gpu_count": 1, "hostname": "box"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> TestDb:
    folder = tmp_path_factory.mktemp("db")
    (folder / "l0.yml").write_text(TEST_DB)
    return load_test_db(folder)


def plan(db: TestDb, stage: StageName, splits: int) -> StagePlan:
    return plan_stage(
        stage, db=db, context="l0_a10", splits=splits, sysinfo=A10, durations=DURATIONS, waives_file="w.txt"
    )


def ids(lines: tuple[object, ...]) -> list[str]:
    return [line.test_id for line in lines]  # type: ignore[attr-defined]


def test_query_merges_stage_facts_over_sysinfo(db: TestDb) -> None:
    found = plan(db, parse_stage_name("A10-PyTorch-1"), 1).query
    assert (found["hostname"], found["stage"], found["backend"], found["gpu"]) == ("box", "pre_merge", "pytorch", "A10")


@pytest.mark.parametrize(
    ("name", "shard_ids"),
    [("A10-PyTorch-1", ["a.py", "b.py"]), ("A10-PyTorch-2", ["c.py", "d.py"])],
    ids=["shard-1", "shard-2"],
)
def test_shards_split_the_render_by_duration(db: TestDb, name: str, shard_ids: list[str]) -> None:
    found = plan(db, parse_stage_name(name), 2)
    assert (ids(found.lines), len(found.rendered), found.shards) == (shard_ids, 4, 2)


def test_isolation_lines_run_apart(db: TestDb) -> None:
    found = plan(db, parse_stage_name("A10-PyTorch-1"), 2)
    assert (ids(found.regular), ids(found.isolated)) == (["a.py"], ["b.py"])


def test_family_name_runs_the_whole_render(db: TestDb) -> None:
    found = plan(db, parse_family_name("A10-PyTorch"), 2)
    assert (ids(found.lines), found.shard, found.shards) == (["a.py", "b.py", "c.py", "d.py"], None, 1)


def test_perf_mode_is_not_sharded_and_has_no_isolation(db: TestDb) -> None:
    found = plan(db, parse_stage_name("A10-PyTorch-Perf-2"), 2)
    assert (len(found.lines), found.isolated, found.pytest_args[:1]) == (4, (), ("--perf",))


def test_post_merge_renders_its_own_blocks(db: TestDb) -> None:
    assert ids(plan(db, parse_stage_name("A10-PyTorch-Post-Merge-1"), 1).lines) == ["post.py"]


def test_empty_render_is_an_error(db: TestDb) -> None:
    with pytest.raises(TestDbError, match="expected the query to select at least one test"):
        plan(db, parse_stage_name("H100_PCIe-PyTorch-1"), 1)
