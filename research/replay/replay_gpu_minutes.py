"""GPU-minutes per GPU type of the replayed commits (mutation_replay_bench.py's commits and records), full set
against the touched rule's function grain: where the GPU time goes, and what narrows it. Predictions only
(test-db/.test_durations and the catalog, through replay_select.rule_plans): no test runs, so it takes
seconds.

    .venv/bin/python research/replay/replay_gpu_minutes.py --commits N --records DIR [--json FILE]

Per commit, each GPU type's stages are summed (minutes x GPUs); a GPU type with no records in DIR/<P>.sqlite
runs the test paths that can load the changed files (the import reach), and its row says it has none. The
timed lines (the perf cases under tests/perf/) are summed apart: their records say only that they ran
unmeasured, so a narrowed stage runs them when they can load a changed file.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from mutation_replay_bench import ROOT, _change, source_commits
from replay_records import TIMED_LINES
from replay_select import Rule, RulePlan, rule_plans

from ci_tool.change.narrowing import split_filters
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog
from ci_tool.stages.durations import estimate_seconds

TIMED = "timed lines"


def by_gpu_type(plan: RulePlan, loaded: LoadedCatalog) -> dict[str, float]:
    """GPU type -> its stages' predicted GPU-minutes (the plan's, shared among the lines by their own
    estimates), the timed lines of every GPU type under TIMED."""
    found: dict[str, float] = defaultdict(float)
    for stage in plan.plans.values():
        if stage.name.is_cpu:
            continue
        ids = [line.test_id for line in stage.lines]
        seconds = estimate_seconds(ids, loaded.durations).seconds if ids else {}
        total = math.fsum(seconds.values())
        scale = stage.predicted_seconds / total if total else 0.0  # the plan's (a narrowed stage's is capped)
        for test_id in ids:
            timed = split_filters(test_id)[0].startswith(TIMED_LINES)
            found[TIMED if timed else stage.name.gpu_type] += seconds[test_id] * scale * stage.name.gpu_count / 60
    return dict(found)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=5)
    parser.add_argument("--records", type=Path, required=True, help="DIR/<parent>.sqlite (replay_records.py)")
    parser.add_argument("--source", default="src/kvengine")
    parser.add_argument("--json", type=Path, help="write every number (JSON)")
    options = parser.parse_args(argv)
    loaded = open_catalog(ROOT / "jenkins" / "stages.yml", ROOT / "test-db")
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="replay-gpu-") as scratch:
        clone = Path(scratch) / "repository"
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(clone)], check=True)
        chosen = [commit for commit in source_commits(clone, options.source) if commit.functions][: options.commits]
        for commit in chosen:
            made = options.records / f"{commit.parent}.sqlite"
            change = _change(clone, commit, history=made if made.is_file() else None)
            plans = rule_plans(loaded, change)
            recorded = sorted(change.touches.gpu_types) if change.touches is not None else []
            full, mine = (by_gpu_type(plans[rule], loaded) for rule in (Rule.FULL, Rule.FUNCTION))
            rows += [{"commit": commit.sha[:10], "gpu_type": gpu_type, "recorded": gpu_type in recorded,
                      "full": round(full[gpu_type], 3), "function_grain": round(mine.get(gpu_type, 0.0), 3)}
                     for gpu_type in sorted(full)]  # fmt: skip
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        total = totals[str(row["gpu_type"])]
        total[0] += float(str(row["full"]))
        total[1] += float(str(row["function_grain"]))
    print("| GPU type | commits with its records | GPU-min full | function grain | saved |\n|---|---|---:|---:|---:|")
    for gpu_type, (full_minutes, kept) in sorted(totals.items()):
        saved = f"{100 * (full_minutes - kept) / full_minutes:.0f} %" if full_minutes else "-"
        with_records = sum(1 for row in rows if row["gpu_type"] == gpu_type and row["recorded"])
        records = "- (run unmeasured)" if gpu_type == TIMED else f"{with_records} of {len(chosen)}"
        print(f"| {gpu_type} | {records} | {full_minutes:.2f} | {kept:.2f} | {saved} |")
    every_full = math.fsum(full_minutes for full_minutes, _ in totals.values())
    every_kept = math.fsum(kept for _, kept in totals.values())
    print(f"| all | | {every_full:.2f} | {every_kept:.2f} | {100 * (every_full - every_kept) / every_full:.0f} % |")
    if options.json is not None:
        options.json.write_text(json.dumps({"commits": len(chosen), "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
