"""Slurm executor: what ci-tool adds around each Slurm job, and the CPU stages' wall time on 1 vs 2 fake nodes.

Runs on a real one-machine cluster (tests/ci_tool/run/slurm/fake_cluster.py: Debian's Slurm, which .ci/run
installs; root needed), in one run, side by side:

    per job          trivial one-test stages (`ci-tool run --executor slurm`) on 2 nodes: one at a time
                     (REPEATS runs of one stage), and JOBS at once (one run; they start together, so on a
                     2-core machine their Python start-ups queue for the cores):
                     submit -> start   sbatch returned -> the job's stage runner started (Slurm's scheduling
                                       and launch, plus the runner's Python start-up)
                     end -> recorded   the runner wrote its results -> their last history row (the submitter
                                       notices the file, reads it, writes result.json and the history)
                     peer: `sbatch --wrap` of a shell that writes the time, submit -> start (Slurm alone),
                     submitted the same way
    CPU stages       this repository's CPU stages (or --stages), as Slurm jobs on a cluster of 1 node, then 2
                     (one CPU each, so a node runs one stage at a time): the run's wall time

    .venv/bin/python bench/slurm_bench.py [--repeats 5] [--jobs 8] [--stages 'CPU-Generic-*'] [--skip-stages]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from ci_tool.bot.grammar import parse_comment
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.run.progress import Progress
from ci_tool.run.session import SessionConfig, catalog_stages, run_session
from ci_tool.stages.catalog_load import open_catalog
from ci_tool.stages.engines import Engine
from ci_tool.stages.executors import Executor
from ci_tool.stages.select import select_stages

ROOT = Path(__file__).resolve().parents[1]


def _fake_cluster() -> ModuleType:
    path = ROOT / "tests" / "ci_tool" / "run" / "slurm" / "fake_cluster.py"
    spec = importlib.util.spec_from_file_location("ci_tool_bench_fake_cluster", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fake_cluster = _fake_cluster()


@contextmanager
def cluster(nodes: int, cpus: int) -> Iterator[object]:
    folder = Path(tempfile.mkdtemp(prefix="ci-tool-slurm-bench-"))
    folder.chmod(0o755)
    started = fake_cluster.start_cluster(folder, partitions={"cpu": [f"n{k}" for k in range(1, nodes + 1)]}, cpus=cpus)
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(started.env)
    try:
        yield started
    finally:
        os.environ.clear()
        os.environ.update(saved)
        started.stop()
        shutil.rmtree(folder, ignore_errors=True)


def run(root: Path, request: str) -> tuple[str, float]:
    """`ci-tool run --executor slurm REQUEST` in `root`, in-process: its run id and wall seconds."""
    loaded = open_catalog(root / "jenkins" / "stages.yml", root / "test-db")
    selection = select_stages(loaded.catalog, parse_comment(request).selection_request(), engine=Engine.LOCAL)
    stages = catalog_stages(
        selection.selected, db=loaded.db, durations=loaded.durations, sysinfo=None, waives_file=None
    )
    config = SessionConfig(
        rootdir=root,
        results_root=root / ".ci-tool" / "runs",
        history=root / ".ci-tool" / "history.sqlite",
        sysinfo={},
        flaky_signatures=load_flaky_signatures(),
        executor=Executor.SLURM,
    )
    started = time.perf_counter()
    result = run_session(request, stages, config=config, fail_fast=False, progress=Progress(io.StringIO(), tty=False))
    return result.run_id, time.perf_counter() - started


def trivial_project(root: Path, jobs: int) -> Path:
    (root / "jenkins").mkdir(parents=True)
    (root / "test-db").mkdir()
    (root / "tests").mkdir()
    for k in range(jobs):
        (root / "tests" / f"test_t{k}.py").write_text("def test_it():\n    pass\n")
    lines = "".join(f"  - tests/test_t{k}.py\n" for k in range(jobs))
    (root / "test-db" / "l0_cpu.yml").write_text(f"version: 0.0.1\nl0_cpu:\n- condition: {{}}\n  tests:\n{lines}")
    family = f"{{name: CPU-Generic, platform: cpu, context: l0_cpu, splits: {jobs}, executor: slurm}}"
    (root / "jenkins" / "stages.yml").write_text(f"version: 1\nfamilies:\n- {family}\n")
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    return root


def job_overheads(root: Path, run_id: str) -> tuple[list[float], list[float]]:
    """Per job: submit -> runner start, and runner end -> last history row."""
    starts, records = [], []
    with HistoryStore(root / ".ci-tool" / "history.sqlite") as store:
        stages = queries.run_stages(store, run_id)
    with sqlite3.connect(root / ".ci-tool" / "history.sqlite") as db:
        for stage in stages:
            slurm = stage.details["slurm"]
            assert isinstance(slurm, dict)
            (recorded,) = db.execute(
                "SELECT max(recorded_at) FROM test_results WHERE run_id = ? AND stage = ?", (run_id, stage.name)
            ).fetchone()
            starts.append(slurm["started_at"] - slurm["jobs"][-1]["submitted_at"])
            records.append(recorded - slurm["finished_at"])
    return starts, records


def bare_sbatch_starts(scratch: Path, jobs: int, tag: str) -> list[float]:
    """Slurm alone: `sbatch --wrap` of a shell that writes the time it started, submitted `jobs` times at once."""
    submitted = {}
    for k in range(jobs):
        out = scratch / f"bare-{tag}-{k}.txt"
        begin = time.time()
        subprocess.run(
            ["sbatch", "--parsable", "-o", "/dev/null", f"--wrap=date +%s.%N > {out}"], check=True, capture_output=True
        )
        submitted[out] = begin
    deadline = time.monotonic() + 120
    while not all(out.exists() and out.read_text().strip() for out in submitted) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [float(out.read_text()) - begin for out, begin in submitted.items()]


def show(label: str, values: list[float]) -> None:
    print(f"  {label:44} median {statistics.median(values):6.2f} s   max {max(values):6.2f} s   ({len(values)} jobs)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="one-stage runs for the per-job overhead")
    parser.add_argument("--jobs", type=int, default=8, help="stages submitted at once for the per-job overhead")
    parser.add_argument("--stages", default="CPU-Generic-*", help="the stage-list glob of the CPU stages timed")
    parser.add_argument("--skip-stages", action="store_true", help="only the per-job overhead")
    args = parser.parse_args()
    reason = fake_cluster.missing_slurm()
    if reason is not None or os.geteuid() != 0:
        print(f"cannot start a Slurm cluster here: {reason or 'needs root'}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="ci-tool-bench-") as scratch_dir:
        scratch = Path(scratch_dir)
        with cluster(nodes=2, cpus=4):
            lone = {"bare": [], "starts": [], "records": []}  # type: dict[str, list[float]]
            for repeat in range(args.repeats):  # interleaved, so drift on a shared machine hits both alike
                lone["bare"] += bare_sbatch_starts(scratch, 1, f"lone{repeat}")
                project = trivial_project(scratch / f"lone{repeat}", 1)
                run_id, _ = run(project, '/bot run --stage-list "CPU-Generic-1"')
                starts, records = job_overheads(project, run_id)
                lone["starts"] += starts
                lone["records"] += records
            bare = bare_sbatch_starts(scratch, args.jobs, "many")
            project = trivial_project(scratch / "many", args.jobs)
            run_id, seconds = run(project, '/bot run --stage-list "CPU-Generic-*"')
            starts, records = job_overheads(project, run_id)
        print(f"per Slurm job, one at a time ({args.repeats} runs of a one-test stage, 2 nodes x 4 CPUs)")
        show("sbatch --wrap (Slurm alone): submit -> start", lone["bare"])
        show("ci-tool stage job: submit -> runner started", lone["starts"])
        show("ci-tool stage job: runner ended -> recorded", lone["records"])
        print(f"per Slurm job, {args.jobs} at once ({args.jobs} one-test stages in one run of {seconds:.1f} s)")
        show("sbatch --wrap (Slurm alone): submit -> start", bare)
        show("ci-tool stage job: submit -> runner started", starts)
        show("ci-tool stage job: runner ended -> recorded", records)
        if args.skip_stages:
            return 0
        request = f'/bot run --stage-list "{args.stages}" --disable-fail-fast'
        walls = {}
        for nodes in (1, 2):
            copy = scratch / f"repo-{nodes}"
            shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", ".venv", ".ci-tool", "__pycache__"))
            with cluster(nodes=nodes, cpus=1):
                run_id, walls[nodes] = run(copy, request)
            with HistoryStore(copy / ".ci-tool" / "history.sqlite") as store:
                ran = queries.run_stages(store, run_id)
            states = ", ".join(f"{s.name} {s.state} {s.duration_seconds:.0f} s" for s in ran)
            print(f"CPU stages on {nodes} node{'s' if nodes > 1 else ''} (1 CPU each): {walls[nodes]:.1f} s ({states})")
        print(f"speed-up 2 nodes / 1 node: {walls[1] / walls[2]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
