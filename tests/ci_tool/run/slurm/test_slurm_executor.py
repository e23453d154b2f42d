"""Stages run as real Slurm jobs on the session's cluster (conftest.py): each shard one job named after its
stage, spread over the nodes; a multi-node stage under srun on two nodes; a GPU request no node can hold
refused at submission; a node set down under a job retried elsewhere, the stage UNSTABLE; Ctrl-C and
SIGTERM leave no job behind and keep what finished; a job past its time limit fails its stage naming the
limit; `ci-tool run --executor slurm` reports what the local run of the same request reports; and a result
file a test plants is neither run nor taken."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore, StageRecord, TestRecord
from ci_tool.run import slurm

FAILING_SUITE = Path(__file__).parents[3] / "fixtures" / "failing_suite"


def ci_tool_here(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def last_run(root: Path) -> tuple[str, list[StageRecord], dict[str, list[TestRecord]]]:
    with HistoryStore(root / ".ci-tool" / "history.sqlite") as store:
        run = queries.recent_runs(store)[0]
        stages = queries.run_stages(store, run.run_id)
        return run.state, stages, {s.name: queries.stage_tests(store, run.run_id, s.name) for s in stages}


def facts(root: Path, name: str) -> list[dict[str, str]]:
    """What the stages' tests recorded of where they ran (conftest.CASES)."""
    return [json.loads(path.read_text()) for path in sorted((root / "out").glob(f"{name}-*.json"))]


def job_ids(stage_folder: Path) -> list[int]:
    return sorted(int(path.stem) for path in (stage_folder / "slurm").glob("*.out"))


def test_each_shard_is_one_slurm_job_named_after_its_stage_and_they_spread_over_both_nodes(
    slurm_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = ci_tool_here(
        capsys,
        "run",
        "--catalog",
        "stages.yml",
        "--executor",
        "slurm",
        '/bot run --stage-list "CPU-Generic-1, CPU-Generic-2"',
    )
    assert (code, out.splitlines()[-1]) == (0, "2 passed, 0 failed, 0 skipped")
    ran = facts(slurm_project, "spread")
    assert sorted((f["CI_TOOL_STAGE"], f["SLURM_JOB_NAME"]) for f in ran) == [
        ("CPU-Generic-1", "CPU-Generic-1"),
        ("CPU-Generic-2", "CPU-Generic-2"),
    ]
    assert {f["SLURMD_NODENAME"] for f in ran} == {"n1", "n2"}
    state, stages, _ = last_run(slurm_project)
    assert state == "passed"
    found, expected = {}, {}
    for stage in stages:
        (job,) = stage.details["slurm"]["jobs"]  # type: ignore[index]
        folder = Path(stage.results_dir)
        err, junit = folder / "slurm" / f"{job['job_id']}.err", folder / "junit.xml"
        found[stage.name] = (stage.details["slurm"]["partition"], job_ids(folder), err.exists(), junit.exists())  # type: ignore[index]
        expected[stage.name] = ("cpu", [job["job_id"]], True, True)
    assert (sorted(found), found) == (["CPU-Generic-1", "CPU-Generic-2"], expected)


def test_a_multi_node_stage_runs_its_tests_under_srun_across_two_nodes_with_its_gpus(
    slurm_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "GB200-8_GPUs-2_Nodes-PyTorch-1"
    code, _ = ci_tool_here(capsys, "stage", "run", name, "--catalog", "stages.yml", "--executor", "slurm")
    (where,) = facts(slurm_project, "where")
    assert code == 0
    assert (where["SLURM_JOB_NUM_NODES"], where["SLURM_STEP_NUM_NODES"], where["SLURM_PROCID"]) == ("2", "2", "0")
    assert where["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"  # 8 GPUs over 2 nodes: 4 on each
    _, (stage,), _ = last_run(slurm_project)
    assert [job["nodes"] for job in stage.details["slurm"]["jobs"]] == ["n[1-2]"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("name", "cpus"),
    [
        pytest.param("CPU-Generic-PerfSanity-1", "4", id="perf-sanity-has-the-node-to-itself"),
        pytest.param("CPU-Generic-Where-1", "1", id="functional-shares-it"),
    ],
)
def test_a_perf_stage_job_is_exclusive(
    slurm_project: Path, capsys: pytest.CaptureFixture[str], name: str, cpus: str
) -> None:
    """--exclusive gives the job every CPU of its node (4 on the fake nodes); a plain one-task job gets one."""
    code, _ = ci_tool_here(capsys, "stage", "run", name, "--catalog", "stages.yml", "--executor", "slurm")
    (where,) = facts(slurm_project, "where")
    assert (code, where["CI_TOOL_STAGE"], where["SLURM_CPUS_ON_NODE"]) == (0, name, cpus)


def test_a_gpu_request_no_node_can_hold_is_refused_at_submission(
    slurm_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "DGX_B200-8_GPUs-PyTorch-1"
    code, out = ci_tool_here(capsys, "stage", "run", name, "--catalog", "stages.yml", "--executor", "slurm")
    _, (stage,), _ = last_run(slurm_project)
    assert code == 1
    assert (stage.state, stage.reason) == (
        "failed",
        "sbatch refused stage 'DGX_B200-8_GPUs-PyTorch-1' (partition dgx-b200-flex, 1 node, gpu:8 per node, 30 min): "
        "Batch job submission failed: Requested node configuration is not available Hint: `sinfo -o '%P %D %G'` "
        "lists the partitions, their nodes and GPUs; --slurm-partition picks another",
    )
    assert f"{name}: failed: sbatch refused stage" in out


def test_a_node_set_down_under_a_job_is_retried_on_the_other_node_and_the_stage_is_unstable(
    slurm_project: Path,
    slurm_cluster,
    start_ci_tool,
    wait_for,  # type: ignore[no-untyped-def]
) -> None:
    process = start_ci_tool(
        slurm_project, "stage", "run", "CPU-Generic-Down-1", "--catalog", "stages.yml", "--executor", "slurm"
    )
    wait_for(lambda: len(facts(slurm_project, "down")) == 1, "the first attempt to start")
    (first,) = facts(slurm_project, "down")
    try:
        slurm_cluster.set_node(first["SLURMD_NODENAME"], "DOWN")
        wait_for(lambda: process.poll() is not None, "the stage to end")
    finally:
        slurm_cluster.set_node(first["SLURMD_NODENAME"], "RESUME")
    second = next(f for f in facts(slurm_project, "down") if f["SLURM_JOB_ID"] != first["SLURM_JOB_ID"])
    _, (stage,), tests = last_run(slurm_project)
    assert process.returncode == 0  # unstable is not a failure
    assert second["SLURMD_NODENAME"] != first["SLURMD_NODENAME"]
    assert (stage.state, stage.reason) == (
        "unstable",
        f"passed after an infra retry: Slurm job {first['SLURM_JOB_ID']} ended NODE_FAIL on "
        f"{first['SLURMD_NODENAME']}, 1 infra retry",
    )
    assert [(t.test_id, t.outcome) for t in tests[stage.name]] == [
        ("cases/case_slurm.py::test_survives_its_node_going_down", "passed")
    ]
    (fault,) = stage.details["infra_retries"]  # type: ignore[misc]
    assert (fault["state"], fault["nodes"]) == ("NODE_FAIL", first["SLURMD_NODENAME"])
    assert not list(Path(stage.results_dir).rglob("attempt-1/*.xml"))  # CI collects **/*.xml: only the last


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_cancels_its_jobs_and_keeps_what_finished(
    slurm_project: Path,
    start_ci_tool,
    wait_for,
    signum: int,  # type: ignore[no-untyped-def]
) -> None:
    process = start_ci_tool(
        slurm_project,
        "run",
        "--catalog",
        "stages.yml",
        "--executor",
        "slurm",
        '/bot run --stage-list "CPU-Generic-Hold-1"',
    )
    wait_for(lambda: len(facts(slurm_project, "hold")) == 1, "the job to hold")
    process.send_signal(signum)
    wait_for(lambda: process.poll() is not None, "ci-tool to stop")
    state, (stage,), tests = last_run(slurm_project)
    ids = job_ids(Path(stage.results_dir))
    assert process.returncode == 130
    assert [job.state for job in slurm.jobs(ids).values()] == [slurm.JobState.CANCELLED]
    assert (state, stage.state, stage.reason) == (
        "interrupted",
        "interrupted",
        f"interrupted: Slurm job {ids[0]} cancelled",
    )
    assert [(t.test_id, t.outcome) for t in tests[stage.name]] == [
        ("cases/case_slurm.py::test_done", "passed"),
        ("cases/case_slurm.py::test_hold", "skipped"),
    ]


def _outcomes(root: Path) -> tuple[str, dict[str, tuple[str, list[tuple[str, str, str | None, str]]]]]:
    state, stages, tests = last_run(root)
    return state, {
        s.name: (s.state, sorted((t.test_id, t.outcome, t.rerun_outcome, t.kind) for t in tests[s.name]))
        for s in stages
    }


def test_a_slurm_run_reports_the_same_tests_and_outcomes_as_the_local_run(
    slurm_cluster: object,
    tmp_path: Path,
    start_ci_tool,
    wait_for,  # type: ignore[no-untyped-def]
) -> None:
    """The failing suite's CPU stages (every kind of failure, a crash, a hang, a flaky rerun, waives, an
    ISOLATION test), run locally and as Slurm jobs at the same time, from fresh copies."""
    request = '/bot run --stage-list "CPU-Generic-*" --disable-fail-fast'
    roots = {executor: Path(shutil.copytree(FAILING_SUITE, tmp_path / executor)) for executor in ("local", "slurm")}
    processes = {
        executor: start_ci_tool(root, "run", "--catalog", "stages.yml", "--executor", executor, request)
        for executor, root in roots.items()
    }
    wait_for(lambda: all(p.poll() is not None for p in processes.values()), "both runs to end")
    runs = {
        executor: (processes[executor].returncode, (root / "ci-tool.log").read_text().splitlines()[-1], _outcomes(root))
        for executor, root in roots.items()
    }
    assert runs["slurm"] == runs["local"]
    code, closing, (state, stages) = runs["slurm"]
    assert (code, closing, state, sorted(stages)) == (
        1,
        "14 passed, 6 failed, 1 skipped",
        "failed",
        ["CPU-Generic-1", "CPU-Generic-Post-Merge-1"],
    )
    assert "Slurm job" in (roots["slurm"] / "ci-tool.log").read_text()


def test_a_job_past_its_time_limit_fails_its_stage_naming_the_limit_and_keeps_what_finished(
    slow_run: tuple[Path, object], wait_for: Callable[..., None]
) -> None:
    root, process = slow_run
    wait_for(lambda: process.poll() is not None, "the time limit", seconds=300)  # type: ignore[attr-defined]
    _, (stage,), tests = last_run(root)
    (job_id,) = job_ids(root / stage.results_dir)
    assert process.returncode == 1  # type: ignore[attr-defined]
    assert (stage.state, stage.reason) == (
        "failed",
        f"Slurm job {job_id} reached its time limit of 1 minute (--time=1)",
    )
    assert [(t.test_id, t.outcome) for t in tests[stage.name]] == [
        ("cases/case_slurm.py::test_quick", "passed"),
        ("cases/case_slurm.py::test_sleeps_past_the_limit", "skipped"),
    ]


def test_a_result_file_a_test_plants_runs_no_code_and_is_refused(
    slurm_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job's test writes `<job id>.result.*` early (it knows $SLURM_JOB_ID) and kills its job program: the
    submitter neither runs the planted pickle nor takes the planted report, and the stage fails saying so."""
    name = "CPU-Generic-Plant-1"
    code, _ = ci_tool_here(capsys, "stage", "run", name, "--catalog", "stages.yml", "--executor", "slurm")
    assert not (slurm_project / "out" / "pwned").exists()
    _, (stage,), _ = last_run(slurm_project)
    (folder,) = slurm_project.glob(f".ci-tool/runs/*/{name}/slurm")  # a stage without results records none
    (job_id,) = job_ids(folder.parent)
    assert (code, stage.state) == (1, "failed")
    assert stage.reason == (
        f"Slurm job {job_id} ended FAILED (signal 9) without the stage's results; see {folder}/{job_id}.err; "
        f"its result file was refused: {folder}/{job_id}.result.json: expected the result of Slurm job {job_id} "
        "from its job program, found a result without its token Hint: something else wrote this file (a test of "
        "the stage?): the stage's results are not taken"
    )


def test_the_suite_keeps_its_environment_once_the_cluster_runs(slurm_cluster: object) -> None:
    # The session's cluster replaces os.environ for the rest of the suite (no allocation's SLURM_*); every
    # later test, a PostgreSQL server's start among them, still needs the PATH and HOME it had.
    assert {"PATH", "HOME"} <= set(os.environ)
    assert [name for name in os.environ if name.startswith("SLURM_")] == ["SLURM_CONF"]


def test_a_setsid_daemon_of_a_test_is_gone_before_the_job_writes_its_result(
    slurm_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job's failing test leaves a daemon (its own session) to rewrite the genuine result as passed once the
    job program writes it: the job program kills it first, so the stage fails with its failed test."""
    name = "CPU-Generic-Daemon-1"
    code, _ = ci_tool_here(capsys, "stage", "run", name, "--catalog", "stages.yml", "--executor", "slurm")
    _, (stage,), tests = last_run(slurm_project)
    assert len(list((slurm_project / "out").glob("daemon-*.pid"))) == 1  # the daemon started
    assert (code, stage.state, stage.reason) == (1, "failed", "")
    assert [(t.test_id, t.outcome) for t in tests[name]] == [
        ("cases/case_slurm.py::test_leaves_a_daemon_to_pass_its_job", "failed")
    ]
