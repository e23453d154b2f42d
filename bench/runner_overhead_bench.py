"""Runner overhead: what ci-tool adds around pytest for one stage, against bare pytest on the same tests.

A synthetic project (FILES test files x TESTS tests, trivial bodies so pytest's own work is small and
the overhead shows) gets a test-db with one entry per file. Measured side by side, interleaved:

    bare pytest      `python -m pytest <the files>` as a process (start-up, collection, run)
    stage run        the `ci-tool stage run` command as a process, the same stage end to end
    ci-tool stage    planning (load test-db, probe sysinfo, query, render, shard) + the pytest process
                     with ci-tool's plugin (selection, list markers, waives, streamed JUnit, events)
                     + recording (merged JUnit, result.json, history rows, CI report)
    overhead         ci-tool stage - bare pytest, and its parts

    .venv/bin/python bench/runner_overhead_bench.py [--files 40] [--tests 50] [--repeats 5]

Each side's best of REPEATS estimates its cost on a machine shared with other jobs; medians are shown too.
Exit status 1 when the best-of overhead per stage is 1 s or more (the goal is under 1 s).
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ci_tool import sysinfo
from ci_tool.history.store import HistoryStore, RunRecord
from ci_tool.outcomes import RunState
from ci_tool.report.model import load_report
from ci_tool.report.report_markdown import render_markdown
from ci_tool.run import recording
from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.run.invocation import RunSettings
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage, SessionConfig, catalog_stages, run_session
from ci_tool.run.stage_runner import run_stage
from ci_tool.stages.catalog_load import open_catalog

STAGE = "CPU-Generic-1"
GOAL_SECONDS = 1.0


def make_project(root: Path, files: int, tests: int) -> list[str]:
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (root / "tests").mkdir()
    paths = []
    for number in range(files):
        body = "".join(f"def test_{n}():\n    assert {n} + 1 > {n}\n\n\n" for n in range(tests))
        path = f"tests/test_m{number:03d}.py"
        (root / path).write_text(body)
        paths.append(path)
    (root / "test-db").mkdir()
    entries = "".join(f"  - {path}\n" for path in paths)
    (root / "test-db" / "l0_cpu.yml").write_text(
        f"version: 0.0.1\nl0_cpu:\n- condition:\n    terms: {{stage: pre_merge}}\n  tests:\n{entries}"
    )
    (root / "test-db" / "waives.txt").write_text(f"{paths[0]}::test_0 SKIP (https://bugs.example/1)\n")
    (root / "stages.yml").write_text(
        "version: 1\nfamilies:\n- {name: CPU-Generic, platform: cpu, context: l0_cpu, splits: 1}\n"
    )
    return paths


def bare_pytest(root: Path, paths: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", *paths], cwd=root, capture_output=True, check=False)
    return time.perf_counter() - started


def ci_tool_command(root: Path, run: int) -> float:
    """The whole `ci-tool stage run` process: start-up, catalog, probe, plan, pytest, JUnit, history."""
    command = [str(Path(sys.executable).with_name("ci-tool")), "stage", "run", STAGE, "--catalog", "stages.yml"]
    command.append("--disable-reuse-test")  # every run runs the stage, as the first does
    started = time.perf_counter()
    subprocess.run([*command, "--output-dir", f"out/{run}"], cwd=root, capture_output=True, check=False)
    return time.perf_counter() - started


def _setup(root: Path) -> tuple[SessionConfig, list[PlannedStage]]:
    """What `ci-tool stage run` loads: the catalog, test-db and durations, this machine's facts."""
    loaded = open_catalog(root / "stages.yml", root / "test-db")
    facts = sysinfo.probe()
    config = SessionConfig(
        rootdir=root,
        results_root=root / ".ci-tool" / "runs",
        history=root / ".ci-tool" / "history.sqlite",
        sysinfo=facts,
        flaky_signatures=load_flaky_signatures(),
    )
    waives = str(root / "test-db" / "waives.txt")
    stage = loaded.catalog.stage(STAGE)
    stages = catalog_stages([stage], db=loaded.db, durations=loaded.durations, sysinfo=facts, waives_file=waives)
    return config, stages


def ci_tool_stage(root: Path, run: int) -> dict[str, float]:
    """One stage, timed by phase: plan, pytest process(es), record (history + JUnit + report)."""
    started = time.perf_counter()
    config, stages = _setup(root)
    plan = stages[0].plan()
    planned = time.perf_counter()
    run_id = f"bench-{run}"
    settings = RunSettings(root, config.results_root / run_id / STAGE, run_id, flaky_signatures=config.flaky_signatures)
    result = run_stage(plan, settings)
    ran = time.perf_counter()
    with HistoryStore(config.history) as store:
        store.start_run(RunRecord(run_id, "bench", RunState.RUNNING, time.time()))
        tests = [recording.to_test_record(test) for test in result.tests]
        store.record_stage(recording.to_stage_record(run_id, result), tests, recorded_at=time.time())
        store.finish_run(run_id, state=RunState(result.state.value), finished_at=time.time())  # one stage ran
        render_markdown(load_report(store, run_id))
    recorded = time.perf_counter()
    pytest_seconds = sum(p.seconds for p in result.processes)
    return {
        "plan": planned - started,
        "pytest": pytest_seconds,
        "runner": (ran - planned) - pytest_seconds,  # list files, process start/stop, JUnit merge, result.json
        "record": recorded - ran,
        "total": recorded - started,
        "tests": float(len(result.tests)),
    }


def whole_session(root: Path) -> float:
    """The same stage through run_session (what `ci-tool run` / `stage run` do), for a cross-check."""
    started = time.perf_counter()
    config, stages = _setup(root)
    run_session("bench", stages, config=config, fail_fast=True, progress=Progress(io.StringIO(), tty=False))
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--tests", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ci-tool-bench-") as scratch:
        root = Path(scratch)
        paths = make_project(root, args.files, args.tests)
        bare_pytest(root, paths)  # warm the file cache and bytecode
        bare, phases, sessions, commands = [], [], [], []
        for run in range(args.repeats):  # interleaved, so drift on a shared machine hits both sides alike
            bare.append(bare_pytest(root, paths))
            phases.append(ci_tool_stage(root, run))
            sessions.append(whole_session(root))
            commands.append(ci_tool_command(root, run))
    print(f"{args.files} files x {args.tests} tests = {int(phases[0]['tests'])} tests, {args.repeats} interleaved runs")
    print(f"{'':32}{'best':>9}{'median':>9}")
    rows = [
        ("bare pytest", bare),
        ("ci-tool stage", [p["total"] for p in phases]),
        ("  plan (load, probe, render)", [p["plan"] for p in phases]),
        ("  pytest process with plugin", [p["pytest"] for p in phases]),
        ("  runner (files, merge, json)", [p["runner"] for p in phases]),
        ("  record (history, report)", [p["record"] for p in phases]),
        ("ci-tool run_session, one stage", sessions),
        ("`ci-tool stage run` process", commands),
    ]
    for label, values in rows:
        print(f"{label:32}{min(values):8.3f}s{statistics.median(values):8.3f}s")
    # Best of N estimates each side's cost on a machine shared with other jobs; the median is shown too.
    overhead = min(p["total"] for p in phases) - min(bare)
    median_overhead = statistics.median(p["total"] for p in phases) - statistics.median(bare)
    print(f"{'overhead per stage':32}{overhead:8.3f}s{median_overhead:8.3f}s")
    command_overhead = min(commands) - min(bare)
    command_median = statistics.median(commands) - statistics.median(bare)
    print(f"{'  as a command (start-up incl.)':32}{command_overhead:8.3f}s{command_median:8.3f}s")
    return 0 if max(overhead, command_overhead) < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
