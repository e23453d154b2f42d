"""Touch records for the mutation replay (mutation_replay_bench.py --records DIR), made as a post-merge run
makes them: every line of its CPU test stages, whole, at the parent P of each replayed commit, and with
--gpu-type G, the lines of G's stages too, its Post-Merge ones included (on a runner of G: records are per
GPU type). A post-merge run is the one that records: its Post-Merge stages run what the pre-merge ones
filter out (H200's `tests/kvengine` whole, where pre-merge runs `-m "gpu"`), so those test files have
records on G and a narrowed stage of G can leave them out.

    .venv/bin/python research/replay/replay_records.py --commits N [--skip K] --jobs J [--gpu-type DGX_H200 [--no-cpu]]
        --out DIR

For N source commits (after the newest K) the replay would take (mutation_replay_bench.source_commits, those that change
a function), each P's tree (out of git, never a worktree) runs its stages' lines, one pytest process a line,
J at a time across all the commits, the longest predicted first, each with touch recording (ci_tool/run/
touch_recorder.py, this checkout's plugin; the tree's own code under test). DIR/<P>.sqlite gets P's records,
stamped with P, the stage and its GPU type, and DIR/records.json each process's seconds and outcome
counts. The engine-part records the replay makes by itself cover only the tests that can reach the engine;
with these, every other test file has a record too, and a narrowed stage can leave it out.

A GPU type's lines under tests/perf/, and a CPU Post-Merge stage's, are left out: their tests are `timed`,
which record only that they ran unmeasured, so a narrowed stage runs them whatever the change, recorded or
not.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from mutation_replay_bench import plain_change, source_commits
from replay_runs import Batch, Run, export_tree, run_batches
from replay_select import RulePlan, post_merge_plan

from ci_tool.change.narrowing import split_filters
from ci_tool.history.store import HistoryStore
from ci_tool.history.touch_table import read_touch_files, record_touches, stamped
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog
from ci_tool.stages.durations import estimate_seconds
from ci_tool.stages.names import CPU_GPU_TOKEN

ROOT = Path(__file__).resolve().parents[2]  # research/replay/ -> the checkout
TIMED_LINES = "tests/perf/"  # a GPU type's lines left out (see the module docstring)


@dataclass(frozen=True)
class Job:
    """One line of one stage at one parent: a pytest process."""

    parent: str
    gpu_type: str
    batch: Batch
    predicted: float  # seconds (test-db/.test_durations)


def jobs_of(plan: RulePlan, parent: str, loaded: LoadedCatalog, gpu_type: str | None, *, cpu: bool = True) -> list[Job]:
    """Every line of the plan's CPU test stages (unless not `cpu`), and of `gpu_type`'s (its timed lines left
    out), as jobs; a line two stages of one GPU type share runs once (its records are the GPU type's)."""
    found = []
    seen: set[tuple[str, str]] = set()  # (GPU type, line)
    for stage, planned in plan.plans.items():
        name = planned.name
        wanted = (cpu and name.is_cpu and name.is_test) or (gpu_type is not None and name.gpu_type == gpu_type)
        lines = [line.test_id for line in planned.lines]
        if not wanted or not lines:
            continue
        predicted = estimate_seconds(lines, loaded.durations).seconds
        for test_id in lines:
            selector, filters = split_filters(test_id)
            timed = selector.startswith(TIMED_LINES) and (not name.is_cpu or name.post_merge)
            if timed or (name.gpu_type, test_id) in seen:
                continue
            seen.add((name.gpu_type, test_id))
            batch = Batch(stage, (selector.strip(),), filters.strip())
            found.append(Job(parent, name.gpu_type, batch, predicted[test_id]))
    return found


def record_all(jobs: Sequence[Job], trees: dict[str, Path], scratch: Path, workers: int) -> list[tuple[Job, Run, Path]]:
    """Run every job with touch recording, `workers` at a time: the GPU type's first (a whole folder in one
    process, `tests/kvengine` on an H200 runner, the longest of all under coverage), then the longest
    predicted first."""
    ordered = sorted(enumerate(jobs), key=lambda item: (item[1].gpu_type == CPU_GPU_TOKEN, -item[1].predicted))

    def one(item: tuple[int, Job]) -> tuple[Job, Run, Path]:
        index, job = item
        folder = scratch / f"job{index}"
        run = run_batches(trees[job.parent], [job.batch], folder, record=True)
        return job, run, folder / "b0.touches.json"

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, ordered))


def write_history(history: Path, parent: str, done: Sequence[tuple[Job, Run, Path]]) -> int:
    """The records of one parent's jobs into `history`; how many rows."""
    rows = 0
    with HistoryStore(history) as store:
        for index, (job, _, touches) in enumerate(done):
            if job.parent != parent or not touches.is_file():
                continue
            found = stamped(read_touch_files([touches]), stage=job.batch.stage, gpu_type=job.gpu_type, commit=parent)
            record_touches(store, f"replay-{parent[:12]}-{index}", found, recorded_at=time.time())
            rows += len(found)
    return rows


def _summary(job: Job, run: Run) -> dict[str, object]:
    counts: dict[str, int] = {}
    for result in run.results:
        counts[result.outcome.value] = counts.get(result.outcome.value, 0) + 1
    return {"parent": job.parent, "stage": job.batch.stage, "line": f"{job.batch.paths[0]} {job.batch.filters}".strip(),
            "predicted_seconds": round(job.predicted, 1), "seconds": round(run.seconds, 1), "outcomes": counts,
            "broken": run.broken}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=5, help="replayed commits whose parents record (default 5)")
    parser.add_argument("--skip", type=int, default=0, help="commits passed over first, newest first (default 0)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest processes at a time (default 2)")
    parser.add_argument("--gpu-type", help="also record this GPU type's stages (run on a runner of it)")
    parser.add_argument("--no-cpu", action="store_true", help="only the --gpu-type's lines (CPU ones made elsewhere)")
    parser.add_argument("--source", default="src/kvengine")
    parser.add_argument("--repository", type=Path, default=ROOT, help="whose history (default: this checkout)")
    parser.add_argument("--out", type=Path, required=True, help="the folder for <parent>.sqlite and records.json")
    options = parser.parse_args(argv)
    started = time.monotonic()
    loaded = open_catalog(options.repository / "jenkins" / "stages.yml", options.repository / "test-db")
    options.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="replay-records-") as scratch:
        clone = Path(scratch) / "repository"
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(options.repository), str(clone)],
                       check=True)  # fmt: skip
        chosen = [commit for commit in source_commits(clone, options.source) if commit.functions]
        chosen = chosen[options.skip : options.skip + options.commits]
        jobs: list[Job] = []
        trees: dict[str, Path] = {}
        for commit in chosen:
            plan = post_merge_plan(loaded, plain_change(clone, commit))
            trees[commit.parent] = export_tree(clone, commit.parent, Path(scratch) / commit.parent[:12])
            jobs += jobs_of(plan, commit.parent, loaded, options.gpu_type, cpu=not options.no_cpu)
        print(f"{len(jobs)} processes for {len(chosen)} parents, {options.jobs} at a time", file=sys.stderr, flush=True)
        done = record_all(jobs, trees, Path(scratch) / "runs", options.jobs)
        rows = {commit.parent: write_history(options.out / f"{commit.parent}.sqlite", commit.parent, done)
                for commit in chosen}  # fmt: skip
        for tree in trees.values():
            shutil.rmtree(tree, ignore_errors=True)
    summary = {
        "command": " ".join(["research/replay/replay_records.py", *(argv if argv is not None else sys.argv[1:])]),
        "seconds": round(time.monotonic() - started, 1),
        "parents": {parent: {"rows": count} for parent, count in rows.items()},
        "processes": [_summary(job, run) for job, run, _ in done],
    }
    (options.out / "records.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"records of {len(chosen)} parents in {summary['seconds']} s: {rows}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
