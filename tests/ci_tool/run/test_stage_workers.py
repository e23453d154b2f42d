"""A stage of a `parallel_tests` family runs its regular lines in several pytest-xdist workers and records
what one process records: the failing suite's every failure kind (crash, hang, flaky rerun, isolation),
run for real both ways."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

from ci_tool.run.invocation import WORKER_THREAD_VARIABLES, RunSettings, planned_invocations
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage, SessionConfig, run_session
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db

STAGE = "CPU-Generic-1"


def test_a_parallel_stage_records_what_one_process_records(
    fixture_run: object,
    tmp_path: Path,
    make_suite: Callable[[Path], Path],
    make_config: Callable[..., SessionConfig],
    make_planned: Callable[..., list[PlannedStage]],
) -> None:
    root = make_suite(tmp_path / "suite")
    config = make_config(root, parallel_families=frozenset({"CPU-Generic"}), stage_cores=2)
    session = run_session(
        "/bot run --disable-fail-fast", make_planned(root, (STAGE,)), config=config, fail_fast=False,
        progress=Progress(io.StringIO()),
    )  # fmt: skip
    (parallel,) = session.results
    alone = fixture_run.stage(STAGE)  # type: ignore[attr-defined]

    def outcomes(result: object) -> dict[str, tuple[str, str, str | None]]:
        return {
            test.first.nodeid: (test.first.outcome, test.first.kind, test.rerun and test.rerun.outcome)
            for test in result.tests  # type: ignore[attr-defined]
        }

    assert outcomes(parallel) == outcomes(alone) and len(outcomes(alone)) > 10
    assert parallel.state is alone.state
    processes = json.loads((parallel.results_dir / "result.json").read_text())["processes"]
    workers = {process["label"]: "--numprocesses=2" in process["command"] for process in processes}
    assert workers["p01-main"] and any(label.startswith("p0") and "isolated" in label for label in workers)
    assert not any(uses for label, uses in workers.items() if "isolated" in label)  # ISOLATION: one to a process


def test_a_perf_stage_and_a_family_without_the_field_run_in_one_process(
    make_config: Callable[..., SessionConfig],
) -> None:
    config = make_config(Path("/nowhere"), parallel_families=frozenset({"CPU-Generic", "CPU-Generic-PerfSanity"}),
                         stage_cores=8)  # fmt: skip
    assert config.workers(parse_stage_name("CPU-Generic-2")) == 8
    assert config.workers(parse_stage_name("CPU-Generic-1-cbts")) == 8
    assert config.workers(parse_stage_name("CPU-Generic-PerfSanity-1")) == 1  # a measurement shares no core
    assert config.workers(parse_stage_name("A10-PyTorch-1")) == 1


def test_each_worker_gets_a_thread_a_core_unless_the_caller_chose(tmp_path: Path) -> None:
    """K workers on K cores: torch and BLAS would each size their pools to the whole host (K x K threads)."""
    (tmp_path / "l0_x.yml").write_text("version: 0.0.1\nl0_x:\n- tests: [tests/a.py, tests/b.py ISOLATION]\n")
    plan = Planner(load_test_db(tmp_path), {}).stage_of_list(parse_stage_name(STAGE), "l0_x")
    settings = RunSettings(rootdir=tmp_path, results_dir=tmp_path / "results", run_id="r1", workers=4)
    main, isolated = planned_invocations(plan, settings)
    threads = {name: "1" for name in WORKER_THREAD_VARIABLES}
    assert main.workers == 4 and threads.items() <= main.environment({"PATH": "/bin"}).items()
    assert main.environment({"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"
    assert isolated.workers == 1 and not set(WORKER_THREAD_VARIABLES) & set(isolated.environment({}))
