"""The program a Slurm stage job runs: `python -m ci_tool.run.slurm_job JOB_FILE`.

The submitting ci-tool (slurm_executor.py) planned the stage and wrote the plan, its run settings and a
secret token to JOB_FILE (`job.json`); the job reads and deletes it, then runs ci-tool's own stage runner
on them, so its results folder (JUnit, events, reruns, waives, result.json) is a local run's. It leaves,
beside JOB_FILE (JobFiles):

    <job id>.started.json   the job id, its node and when it started, as soon as it starts
    <job id>.result.json    the JobReport (the StageResult, when and where it ended, the token), written
                            atomically once the tests ended: what the submitter records

Both files are plain JSON (typed_json.py), since the job's tests run as the same user and can write any
file here: the submitter builds only the declared values from them, reads the result only once Slurm
says the job ended, and takes it only with the token of that submission and a state its tests agree with (a
"passed" with a failed test is refused). No test process is left to read or replace the result: the runner
kills every process the tests started, also those that left their group (`setsid`: run/reaper.py), before
it writes the result. The tests never see the token:
the job file is gone before they start, it is in no environment or command line, and this process is
made undumpable (no same-user ptrace or /proc/<pid>/mem). SIGTERM (scancel, the time limit, a node set
down) interrupts the runner as Ctrl-C does: the tests that finished are kept and the result says
interrupted. The exit status is 0 once the result is written; another one means the runner never got
that far.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ci_tool import interrupts, typed_json
from ci_tool.atomic import write_text_atomically
from ci_tool.errors import SlurmError, Where
from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.run.invocation import RunSettings
from ci_tool.run.jobs import run_job
from ci_tool.run.stage_runner import StageResult
from ci_tool.stages.stage_plan import StagePlan
from ci_tool.text_file import read_text

JOB_ID_ENV = "SLURM_JOB_ID"
NODE_ENV = "SLURMD_NODENAME"
_PR_SET_DUMPABLE = 4  # prctl(2)


@dataclass(frozen=True)
class JobFiles:
    """A stage's Slurm files: `<stage folder>/slurm/`."""

    folder: Path

    @property
    def spec(self) -> Path:
        return self.folder / "job.json"

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
        return self.folder / f"{job_id}.result.json"


@dataclass(frozen=True)
class JobSpec:
    """What a job runs: the plan made by its submitter, and the settings of its run."""

    plan: StagePlan
    settings: RunSettings
    files: JobFiles
    token: str  # new for each submission: the job's report carries it back


def new_token() -> str:
    return secrets.token_hex(16)


@dataclass(frozen=True)
class JobReport:
    """What a job leaves for its submitter."""

    result: StageResult
    job_id: str
    node: str
    started_at: float  # when the job's runner started (time.time())
    finished_at: float  # when it had written the stage's results
    token: str  # its JobSpec's: what tells the job program's report from one a test wrote


def write_spec(spec: JobSpec) -> None:
    spec.files.folder.mkdir(parents=True, exist_ok=True)
    write_text_atomically(spec.files.spec, typed_json.dump(spec), what="the Slurm job's plan", mode=0o600)


def read_spec(path: Path) -> JobSpec:
    text = read_text(path, name="the Slurm job's plan", error=SlurmError)
    return typed_json.load(text, JobSpec, file=str(path), error=SlurmError)


def read_report(path: Path, *, job_id: int, token: str) -> JobReport | None:
    """The report the job program of Slurm job `job_id` wrote, or None when there is none; a SlurmError
    when the file holds anything else: no JobReport, or one without that submission's token."""
    if not path.is_file():
        return None
    text = read_text(path, name="the job's result", error=SlurmError)
    if not _sealed(text, job_id=job_id, token=token):  # the seal first: what else a forged file holds is no matter
        raise SlurmError(
            f"expected the result of Slurm job {job_id} from its job program, found a result without its token",
            where=Where(str(path)),
            hint="something else wrote this file (a test of the stage?): the stage's results are not taken",
        )
    report = typed_json.load(text, JobReport, file=str(path), error=SlurmError)
    failed = report.result.counts[TestOutcome.FAILED]
    if report.result.state in (StageState.PASSED, StageState.REUSED) and failed:
        raise SlurmError(
            f"expected a failed, unstable or interrupted result of Slurm job {job_id} (it holds {failed} failed "
            f"test{'s' if failed != 1 else ''}), found state {report.result.state.value}",
            where=Where(str(path)),
            hint="the job program never writes such a result: the stage's results are not taken",
        )
    return report


def _sealed(text: str, *, job_id: int, token: str) -> bool:
    """Whether `text` is a JSON object carrying Slurm job `job_id` and that submission's token."""
    try:
        data = json.loads(text)
    except ValueError:
        return False
    found = data.get("token") if isinstance(data, dict) else None
    return isinstance(found, str) and secrets.compare_digest(found, token) and data.get("job_id") == str(job_id)


def _undumpable() -> None:
    """Keep this process's memory (the token) from same-user processes: no ptrace, no /proc/<pid>/mem."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: nothing to do
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m ci_tool.run.slurm_job JOB_FILE", file=sys.stderr)
        return 2
    started_at = time.time()
    try:
        spec = read_spec(Path(args[0]))
    except SlurmError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    Path(args[0]).unlink()  # the token stays out of reach of the tests, which start below
    _undumpable()
    job_id = os.environ.get(JOB_ID_ENV, "local")
    node = os.environ.get(NODE_ENV, socket.gethostname())
    started = {"job_id": job_id, "node": node, "started_at": started_at, "pid": os.getpid()}
    write_text_atomically(spec.files.started(job_id), json.dumps(started) + "\n", what="the job's start")
    with interrupts.terminating_signals_interrupt():
        result = run_job(spec.plan, spec.settings)
    report = JobReport(result, job_id, node, started_at, time.time(), spec.token)
    write_text_atomically(spec.files.result(job_id), typed_json.dump(report), what="the job's result")
    print(f"{result.stage}: {result.state}" + (f": {result.reason}" if result.reason else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
