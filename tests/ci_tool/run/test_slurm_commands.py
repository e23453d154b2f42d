"""What Slurm 22.05 prints, read back: real squeue --json, scontrol show job and sacct -c output captured
from a one-machine cluster (slurm_outputs/), sbatch's command line, and what an ended job means for its
stage (slurm_executor.verdict)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool import typed_json
from ci_tool.errors import SlurmError
from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.run.junit import CaseResult
from ci_tool.run.slurm import (
    Job,
    JobRequest,
    JobState,
    parse_job_id,
    parse_sacct,
    parse_scontrol_job,
    parse_squeue_json,
)
from ci_tool.run.slurm_executor import JobVerdict, gpus_per_node, job_program_exited, verdict
from ci_tool.run.slurm_job import JobReport, read_report
from ci_tool.run.stage_runner import StageResult, TestResult
from ci_tool.stages.names import parse_stage_name

OUTPUTS = Path(__file__).parent / "slurm_outputs"


def test_squeue_json_lists_every_job_the_controller_holds_with_decoded_wait_statuses() -> None:
    jobs = parse_squeue_json((OUTPUTS / "squeue.json").read_text())
    assert [(j.job_id, j.name, j.state, j.exit_code, j.signal, j.nodes, j.reason) for j in jobs.values()] == [
        (9, "j1.sh", JobState.FAILED, None, 1, "", "BadConstraints"),  # refused at submission
        (10, "j1.sh", JobState.CANCELLED, 0, None, "", "PartitionNodeLimit"),
        (11, "j1.sh", JobState.CANCELLED, 0, None, "", "PartitionNodeLimit"),
        (12, "ok", JobState.COMPLETED, 0, None, "n1", ""),
        (13, "exit3", JobState.FAILED, 3, None, "n1", "NonZeroExitCode"),
        (14, "killed", JobState.FAILED, None, 9, "n1", "JobLaunchFailure"),
        (15, "slow", JobState.TIMEOUT, None, 15, "n3", "TimeLimit"),
        (16, "running", JobState.PENDING, 0, None, "", "BeginTime"),
        (17, "cancelled", JobState.CANCELLED, None, 15, "n1", ""),
        (18, "pending", JobState.PENDING, 0, None, "", "PartitionNodeLimit"),
    ]


@pytest.mark.parametrize(
    ("job_id", "expected"),
    [
        (13, Job(13, "exit3", JobState.FAILED, 3, None, "n1", "NonZeroExitCode")),
        (14, Job(14, "killed", JobState.FAILED, None, 9, "n1", "JobLaunchFailure")),
        (15, Job(15, "slow", JobState.TIMEOUT, None, 15, "n3", "TimeLimit")),
        (17, Job(17, "cancelled", JobState.CANCELLED, None, 15, "n1", "")),
        (18, Job(18, "pending", JobState.PENDING, 0, None, "", "PartitionNodeLimit")),
    ],
    ids=["exit-3", "killed", "timeout", "cancelled", "pending"],
)
def test_scontrol_show_job(job_id: int, expected: Job) -> None:
    assert parse_scontrol_job((OUTPUTS / f"scontrol-{job_id}.txt").read_text()) == expected


def test_job_completion_records_give_states_and_nodes() -> None:
    jobs = parse_sacct((OUTPUTS / "sacct.txt").read_text())
    assert [(j.job_id, j.state, j.nodes) for j in (jobs[11], jobs[15], jobs[16])] == [
        (11, JobState.CANCELLED, ""),
        (15, JobState.TIMEOUT, "n3"),
        (16, JobState.NODE_FAIL, "n1"),
    ]


@pytest.mark.parametrize(("stdout", "job_id"), [("42\n", 42), ("42;cluster\n", 42)], ids=["bare", "cluster"])
def test_sbatch_parsable_prints_the_job_id(stdout: str, job_id: int) -> None:
    assert parse_job_id(stdout) == job_id


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: parse_job_id("Submitted batch job 42\n"),
            "expected sbatch --parsable to print a job id, found 'Submitted batch job 42'",
        ),
        (lambda: parse_squeue_json("{}"), "expected squeue --json to print its jobs, found '{}' ('jobs')"),
        (
            lambda: parse_scontrol_job("JobId=3 JobState=RUNNING"),
            "expected scontrol show job to print JobId, JobState and ExitCode, found 'JobId=3 JobState=RUNNING'",
        ),
        (lambda: parse_sacct("3|x|SLEEPING|n1\n"), "expected a Slurm job state, found 'SLEEPING'"),
    ],
    ids=["sbatch", "squeue", "scontrol", "state"],
)  # fmt: skip
def test_output_that_is_not_slurms_is_our_error(call: object, message: str) -> None:
    with pytest.raises(SlurmError) as caught:
        call()  # type: ignore[operator]
    assert str(caught.value) == message


def test_sbatch_asks_for_the_stage_as_one_job() -> None:
    request = JobRequest(
        name="GB200-8_GPUs-2_Nodes-PyTorch-1",
        script=Path("/r/x/slurm/job.sh"),
        workdir=Path("/r"),
        stdout=Path("/r/x/slurm/%j.out"),
        stderr=Path("/r/x/slurm/%j.err"),
        partition="gb200-flex",
        nodes=2,
        gpus_per_node=4,
        time_minutes=90,
        exclude=("n2",),
        comment="ci-tool run 1",
    )
    assert request.sbatch_args() == [
        "sbatch", "--parsable", "--job-name=GB200-8_GPUs-2_Nodes-PyTorch-1", "--chdir=/r",
        "--output=/r/x/slurm/%j.out", "--error=/r/x/slurm/%j.err", "--nodes=2", "--ntasks-per-node=1",
        "--no-requeue", "--partition=gb200-flex", "--gres=gpu:4", "--time=90", "--exclude=n2",
        "--comment=ci-tool run 1", "/r/x/slurm/job.sh",
    ]  # fmt: skip
    assert request.describe() == "partition gb200-flex, 2 nodes, gpu:4 per node, 90 min, excluding n2"


@pytest.mark.parametrize(
    ("stage", "per_node"),
    [
        ("CPU-Generic-1", 0),
        ("A10-PyTorch-1", 1),
        ("GB200-8_GPUs-2_Nodes-PyTorch-1", 4),
        ("GB300-36_GPUs-9_Nodes-PyTorch-1", 4),
    ],
    ids=["cpu", "one", "two-nodes", "nine-nodes"],
)
def test_gres_asks_for_each_nodes_share_of_the_gpus(stage: str, per_node: int) -> None:
    assert gpus_per_node(parse_stage_name(stage)) == per_node


def test_gpus_that_do_not_split_over_the_nodes_are_refused() -> None:
    with pytest.raises(SlurmError) as caught:
        gpus_per_node(parse_stage_name("GB200-3_GPUs-2_Nodes-PyTorch-1"))
    assert str(caught.value) == (
        "expected the 3 GPUs of 'GB200-3_GPUs-2_Nodes-PyTorch-1' to split evenly over its 2 nodes, found a "
        "remainder Hint: name a GPU count that is a multiple of the node count"
    )


@pytest.mark.parametrize(
    ("state", "started", "has_report", "expected"),
    [
        (JobState.COMPLETED, True, True, JobVerdict.RESULTS),
        (JobState.COMPLETED, True, False, JobVerdict.FAILED),
        (JobState.FAILED, True, False, JobVerdict.FAILED),
        (JobState.FAILED, False, False, JobVerdict.INFRA),
        (JobState.NODE_FAIL, True, True, JobVerdict.INFRA),
        (JobState.BOOT_FAIL, False, False, JobVerdict.INFRA),
        (JobState.PREEMPTED, True, False, JobVerdict.INFRA),
        (JobState.TIMEOUT, True, True, JobVerdict.TIMEOUT),
        (JobState.CANCELLED, False, False, JobVerdict.CANCELLED),
        (JobState.OUT_OF_MEMORY, True, False, JobVerdict.FAILED),
    ],
    ids=[
        "completed", "completed-without-results", "runner-crashed", "launch-failed", "node-fail", "boot-fail",
        "preempted", "timeout", "cancelled", "out-of-memory",
    ],
)  # fmt: skip
def test_what_an_ended_job_means_for_its_stage(
    state: JobState, started: bool, has_report: bool, expected: JobVerdict
) -> None:
    report = object() if has_report else None
    assert verdict(Job(1, "s", state), started=started, report=report) is expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("state", "taken"),
    [
        (JobState.COMPLETED, True),
        (JobState.CANCELLED, True),  # scancel: SIGTERM, the job program writes what finished and exits
        (JobState.TIMEOUT, True),
        (JobState.FAILED, False),  # the job program exits 0 once its result is written: something killed it
        (JobState.OUT_OF_MEMORY, False),
        (JobState.NODE_FAIL, False),
    ],
    ids=lambda value: str(value),
)
def test_a_result_file_is_taken_only_after_an_end_its_job_program_exits_on(state: JobState, taken: bool) -> None:
    assert job_program_exited(Job(7, "CPU-Generic-1", state)) is taken


def _report(tmp_path: Path, state: StageState, outcome: TestOutcome) -> Path:
    """A job's result file with one test of `outcome` and the stage's `state`, sealed with the right token (a
    process that read the token, or a job program gone wrong, wrote it)."""
    case = CaseResult("cases/case_x.py::test_x", outcome, 1.0, stage="CPU-Generic-1")
    result = StageResult("CPU-Generic-1", state, "", (TestResult(case),), (), (), 0.0, 1.0, tmp_path)
    path = tmp_path / "7.result.json"
    path.write_text(typed_json.dump(JobReport(result, "7", "n1", 0.0, 1.0, "t" * 32)))
    return path


def test_a_passed_result_with_a_failed_test_is_refused(tmp_path: Path) -> None:
    path = _report(tmp_path, StageState.PASSED, TestOutcome.FAILED)
    with pytest.raises(SlurmError) as raised:
        read_report(path, job_id=7, token="t" * 32)
    assert str(raised.value) == (
        f"{path}: expected a failed, unstable or interrupted result of Slurm job 7 (it holds 1 failed test), found "
        "state passed Hint: the job program never writes such a result: the stage's results are not taken"
    )


@pytest.mark.parametrize(
    ("state", "outcome"),
    [(StageState.PASSED, TestOutcome.PASSED), (StageState.FAILED, TestOutcome.FAILED)],
    ids=["passed", "failed"],
)
def test_a_result_whose_state_agrees_with_its_tests_is_taken(
    tmp_path: Path, state: StageState, outcome: TestOutcome
) -> None:
    report = read_report(_report(tmp_path, state, outcome), job_id=7, token="t" * 32)
    assert report is not None and report.result.state is state
