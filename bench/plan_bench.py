"""Planning benchmark: load + validate the catalog and plan every stage (render + shard), end to end.

Two catalogs:
- ours: jenkins/stages.yml against test-db/ (and test-db/.test_durations when it exists);
- reference-scale: one family per real stage of bench/shard_bench.py (40 families; the
  three whose pool reports another GPU name are left out), against the corpus
  test-db and its durations, each split into min(8, tests // 10) shards (perf mode: 1); the families
  expand to about 150 stages.

For each, the best of --repeat runs of: loading the test-db, loading and validating the catalog (which
renders each family once for auto splits and derived timeouts), planning every stage with a fresh planner
(render + shard every family), and loading and planning with one planner (as `ci-tool run` and `bot plan` do:
the plan reuses the load's renders). Goal: planning the whole catalog well under a second.

    .venv/bin/python bench/plan_bench.py [--corpus ../shared/corpus/trtllm] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from shard_bench import CASES

from ci_tool.stages.catalog import Catalog
from ci_tool.stages.catalog_load import load_catalog, read_catalog
from ci_tool.stages.catalog_rules import platform_for
from ci_tool.stages.durations import Durations, load_durations
from ci_tool.stages.modes import TestMode
from ci_tool.stages.names import parse_family_name
from ci_tool.stages.planner import Planner
from ci_tool.stages.query import render_query
from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.select import normalize_query, render

ROOT = Path(__file__).resolve().parents[1]
GOAL_SECONDS = 1.0
T = TypeVar("T")


def best(repeat: int, work: Callable[[], T]) -> tuple[float, T]:
    """The fastest of `repeat` runs, and the last result."""
    seconds, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        seconds = min(seconds, time.perf_counter() - started)
    assert result is not None
    return seconds, result


def reference_catalog_text(db: TestDb) -> str:
    """A stages.yml with one family per shard-bench stage, split by the size of its render."""
    lines = ["version: 1", "families:"]
    for name, context, arch, gpu in CASES:
        if gpu is not None:  # a pool that reports another GPU name: the catalog has no such override yet
            continue
        family = parse_family_name(name.rsplit("-", 1)[0])
        tests = len({line.test_id for line in render(db, context, normalize_query(render_query(family, arch=arch)))})
        splits = 1 if family.mode is TestMode.PERF else max(1, min(8, tests // 10))
        lines += [
            f"- name: {family.name}",
            f"  platform: {platform_for(family)}",
            f"  context: {context}",
            f"  splits: {splits}",
            f"  arch: {arch}",
        ]
    return "\n".join(lines) + "\n"


def measure(
    title: str, load_db: Callable[[], TestDb], load: Callable[[Planner], Catalog], durations: Durations, repeat: int
) -> float:
    db_seconds, db = best(repeat, load_db)
    catalog_seconds, catalog = best(repeat, lambda: load(Planner(db, durations)))
    plan_seconds, plans = best(repeat, lambda: Planner(db, durations).selection(catalog.stages, allow_empty=True))

    def load_and_plan() -> int:
        planner = Planner(db, durations)
        return len(planner.selection(load(planner).stages, allow_empty=True))

    shared_seconds, _ = best(repeat, load_and_plan)
    tests = sum(len(plan.lines) for plan in plans.values())
    total = db_seconds + catalog_seconds + plan_seconds
    print(f"{title}: {len(catalog.families)} families, {len(catalog.stages)} stages, {tests} test lines planned")
    print(f"  load test-db            {db_seconds * 1000:7.1f} ms")
    print(f"  load + validate catalog {catalog_seconds * 1000:7.1f} ms  (renders each family once)")
    print(
        f"  plan every stage        {plan_seconds * 1000:7.1f} ms  ({plan_seconds / len(plans) * 1e6:.0f} us a stage)"
    )
    print(f"  load + plan, one planner {shared_seconds * 1000:6.1f} ms  (the plan reuses the load's renders)")
    print(f"  total                   {total * 1000:7.1f} ms  (goal < {GOAL_SECONDS * 1000:.0f} ms)")
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / ".." / "shared" / "corpus" / "trtllm")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    ours_durations_file = ROOT / "test-db" / ".test_durations"
    ours_durations = load_durations(ours_durations_file) if ours_durations_file.is_file() else {}
    worst = measure(
        "ours (jenkins/stages.yml)",
        lambda: load_test_db(ROOT / "test-db"),
        lambda planner: load_catalog(ROOT / "jenkins" / "stages.yml", planner),
        ours_durations,
        args.repeat,
    )
    if (args.corpus / "test-db").is_dir():
        durations = load_durations(args.corpus / "test_durations.json")
        text = reference_catalog_text(load_test_db(args.corpus / "test-db"))
        worst = max(
            worst,
            measure(
                "reference-scale (shard-bench families over the TensorRT-LLM corpus)",
                lambda: load_test_db(args.corpus / "test-db"),
                lambda planner: read_catalog(text, planner, file="reference-stages.yml"),
                durations,
                args.repeat,
            ),
        )
    else:
        print(f"(corpus not found at {args.corpus}: reference-scale catalog skipped)")
    return 0 if worst < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
