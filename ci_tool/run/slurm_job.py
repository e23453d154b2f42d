"""The program a Slurm stage job runs: `python -m ci_tool.run.slurm_job JOB_FILE`.

The submitting ci-tool (slurm_executor.py) planned the stage and wrote the plan and its run settings to
JOB_FILE; the job runs ci-tool's own stage runner on them, so its results folder (JUnit, events, reruns,
waives, result.json) is a local run's. It leaves, beside JOB_FILE (JobFiles):

    <job id>.started.json   the job id, its node and when it started, as soon as it starts
    <job id>.result.pickle  the StageResult, when and where it ended: what the submitter records

Both sides are one program (one checkout and venv, on a file system the nodes share), so the hand-off is a
pickle of the frozen values the runner already has, written and read only by ci-tool. SIGTERM (scancel, the
time limit, a node set down) interrupts the runner as Ctrl-C does: the tests that finished are kept and the
result says interrupted. The exit status is 0 once the result is written; another one means the runner
never got that far.
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ci_tool import interrupts
from ci_tool.atomic import write_bytes_atomically, write_text_atomically
from ci_tool.run.invocation import RunSettings
from ci_tool.run.jobs import run_job
from ci_tool.run.stage_runner import StageResult
from ci_tool.stages.plan import StagePlan

JOB_ID_ENV = "SLURM_JOB_ID"
NODE_ENV = "SLURMD_NODENAME"


@dataclass(frozen=True)
class JobFiles:
    """A stage's Slurm files: `<stage folder>/slurm/`."""

    folder: Path

    @property
    def spec(self) -> Path:
        return self.folder / "job.pickle"

    @property
    def script(self) -> Path:
        return self.folder / "job.sh"

    def stdout(self, job_id: int | str) -> Path:
        return self.folder / f"{job_id}.out"

    def stderr(self, job_id: int | str) -> Path:
        return self.folder / f"{job_id}.err"

    def started(self, job_id: int | str) -> Path:
        return self.folder / f"{job_id}.started.json"

    def result(self, job_id: int | str) -> Path:
        return self.folder / f"{job_id}.result.pickle"


@dataclass(frozen=True)
class JobSpec:
    """What a job runs: the plan made by its submitter, and the settings of its run."""

    plan: StagePlan
    settings: RunSettings
    files: JobFiles


@dataclass(frozen=True)
class JobReport:
    """What a job leaves for its submitter."""

    result: StageResult
    job_id: str
    node: str
    started_at: float  # when the job's runner started (time.time())
    finished_at: float  # when it had written the stage's results


def write_spec(spec: JobSpec) -> None:
    spec.files.folder.mkdir(parents=True, exist_ok=True)
    write_bytes_atomically(spec.files.spec, pickle.dumps(spec), what="the Slurm job's plan")


def read_report(path: Path) -> JobReport | None:
    """The report a job wrote, or None when there is none (yet)."""
    try:
        report = pickle.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    assert isinstance(report, JobReport)  # written by this program (write_bytes_atomically: whole or absent)
    return report


def read_started(path: Path) -> dict[str, object] | None:
    try:
        started: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return started


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m ci_tool.run.slurm_job JOB_FILE", file=sys.stderr)
        return 2
    started_at = time.time()
    spec = pickle.loads(Path(args[0]).read_bytes())
    assert isinstance(spec, JobSpec)  # written by slurm_executor
    job_id = os.environ.get(JOB_ID_ENV, "local")
    node = os.environ.get(NODE_ENV, socket.gethostname())
    started = {"job_id": job_id, "node": node, "started_at": started_at, "pid": os.getpid()}
    write_text_atomically(spec.files.started(job_id), json.dumps(started) + "\n", what="the job's start")
    with interrupts.terminating_signals_interrupt():
        result = run_job(spec.plan, spec.settings)
    report = JobReport(result, job_id, node, started_at, time.time())
    write_bytes_atomically(spec.files.result(job_id), pickle.dumps(report), what="the job's result")
    print(f"{result.stage}: {result.state}" + (f": {result.reason}" if result.reason else ""))
    return 0


if __name__ == "__main__":  # run as the module itself, so the pickles name its classes, not __main__'s
    from ci_tool.run.slurm_job import main as job_main

    sys.exit(job_main())
