"""Slurm, driven through its commands: the only module that runs sbatch, squeue, scontrol, scancel and sacct,
and the one that reads what they print. The cluster is the one SLURM_CONF names (Slurm's convention).

    submit(request)   sbatch --parsable ...           -> the job id (a refusal is a SlurmError)
    jobs(ids)         squeue --json                   -> each job's state, exit code, nodes, pending reason
                      scontrol show job ID            (jobs squeue no longer lists)
                      sacct -c                        (job-completion records, when the cluster keeps them)
    cancel(ids)       scancel ID ...

What Slurm 22.05 (Debian 12) prints, and how it is read:
- `squeue --json` lists every job the controller holds, ended ones too (for MinJobAge, 300 s by default),
  whatever `--jobs` or `--states` say: the jobs are picked by id here. Its `exit_code` is the raw wait
  status (a job that exited 3 reads 768).
- `scontrol show job` has no JSON: `Key=Value` words; `ExitCode=3:0` is code:signal.
- `sacct -c --parsable2` reads the job-completion file (JobCompType=jobcomp/filetxt); its ExitCode is
  not trusted (a NODE_FAIL job reads 0:0), so only the state and nodes are taken from it.
- A job state can carry words after it (`CANCELLED by 0`): the first word is the state.
"""

from __future__ import annotations

import enum
import json
import os
import re
import subprocess
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tool.errors import SlurmError

COMMAND_TIMEOUT_SECONDS = 60
SLURM_CONF_ENV = "SLURM_CONF"
_JOB_ID = re.compile(r"(\d+)(?:;\S+)?")  # `--parsable` prints `ID` or `ID;cluster`
_WORD = re.compile(r"(\w+)=(\S*)")


class JobState(enum.StrEnum):
    """Slurm's job states (`squeue --help`, JOB STATE CODES)."""

    PENDING = "PENDING"
    CONFIGURING = "CONFIGURING"
    RUNNING = "RUNNING"
    COMPLETING = "COMPLETING"
    SUSPENDED = "SUSPENDED"
    REQUEUED = "REQUEUED"
    REQUEUE_HOLD = "REQUEUE_HOLD"
    REQUEUE_FED = "REQUEUE_FED"
    RESV_DEL_HOLD = "RESV_DEL_HOLD"
    RESIZING = "RESIZING"
    SIGNALING = "SIGNALING"
    STAGE_OUT = "STAGE_OUT"
    STOPPED = "STOPPED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    BOOT_FAIL = "BOOT_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    PREEMPTED = "PREEMPTED"
    DEADLINE = "DEADLINE"
    REVOKED = "REVOKED"
    SPECIAL_EXIT = "SPECIAL_EXIT"

    @property
    def ended(self) -> bool:
        return self in _ENDED


_ENDED = frozenset(
    {
        JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED, JobState.TIMEOUT, JobState.NODE_FAIL,
        JobState.BOOT_FAIL, JobState.OUT_OF_MEMORY, JobState.PREEMPTED, JobState.DEADLINE, JobState.REVOKED,
        JobState.SPECIAL_EXIT,
    }
)  # fmt: skip
# Reasons a pending job gives when it can never start as asked (the cluster accepted it anyway: a
# cluster without EnforcePartLimits queues a request its partition cannot hold).
NEVER_STARTS = frozenset({"PartitionNodeLimit", "PartitionTimeLimit", "BadConstraints", "PartitionConfig"})


@dataclass(frozen=True)
class JobRequest:
    """One batch job: what `sbatch` is asked for."""

    name: str  # the stage name
    script: Path
    workdir: Path
    stdout: Path  # may hold sbatch's %j
    stderr: Path
    partition: str | None = None  # None: the cluster's default partition
    nodes: int = 1
    gpus_per_node: int = 0
    time_minutes: int | None = None  # None: the partition's default limit
    exclude: tuple[str, ...] = ()  # node lists (`n2`, `n[3-4]`) the job must not run on
    comment: str = ""
    exclusive: bool = False  # the nodes to itself: no other job shares them (perf stages)

    def sbatch_args(self) -> list[str]:
        """The sbatch command line (options as `--opt=value`)."""
        args = [
            "sbatch", "--parsable", f"--job-name={self.name}", f"--chdir={self.workdir}",
            f"--output={self.stdout}", f"--error={self.stderr}", f"--nodes={self.nodes}",
            "--ntasks-per-node=1", "--no-requeue",  # infra faults are retried by ci-tool, on other nodes
        ]  # fmt: skip
        if self.partition:
            args.append(f"--partition={self.partition}")
        if self.gpus_per_node:
            args.append(f"--gres=gpu:{self.gpus_per_node}")
        if self.time_minutes is not None:
            args.append(f"--time={self.time_minutes}")
        if self.exclude:
            args.append(f"--exclude={','.join(self.exclude)}")
        if self.exclusive:
            args.append("--exclusive")
        if self.comment:
            args.append(f"--comment={self.comment}")
        return [*args, str(self.script)]

    def describe(self) -> str:
        """`partition cpu, 2 nodes, gpu:4 per node, 30 min`: what was asked, for messages."""
        parts = [f"partition {self.partition or '(default)'}", f"{self.nodes} node{'s' if self.nodes != 1 else ''}"]
        if self.gpus_per_node:
            parts.append(f"gpu:{self.gpus_per_node} per node")
        if self.time_minutes is not None:
            parts.append(f"{self.time_minutes} min")
        if self.exclusive:
            parts.append("exclusive")
        if self.exclude:
            parts.append(f"excluding {','.join(self.exclude)}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Job:
    """A job as Slurm reports it."""

    job_id: int
    name: str
    state: JobState
    exit_code: int | None = None  # the batch script's exit status; None when Slurm does not say
    signal: int | None = None  # the signal that ended it, when one did
    nodes: str = ""  # the node list (`n1`, `n[1-2]`); empty before it starts
    reason: str = ""  # why it pends, or why it ended (`NodeDown`, `TimeLimit`); empty for none

    @property
    def ended(self) -> bool:
        return self.state.ended


def _state(text: str) -> JobState:
    word = text.split()[0] if text.split() else ""
    try:
        return JobState(word)
    except ValueError:
        raise SlurmError(f"expected a Slurm job state, found {text!r}") from None


def _text(text: str) -> str:
    """Slurm's words for nothing (`None`, `(null)`) as ""."""
    return "" if text in ("None", "(null)") else text


def parse_job_id(stdout: str) -> int:
    """The job id `sbatch --parsable` printed."""
    match = _JOB_ID.fullmatch(stdout.strip())
    if match is None:
        raise SlurmError(f"expected sbatch --parsable to print a job id, found {stdout.strip()!r}")
    return int(match.group(1))


def parse_squeue_json(text: str) -> dict[int, Job]:
    """`squeue --json`: every job it lists, by id."""
    try:
        listed = json.loads(text)["jobs"]
        jobs = {}
        for entry in listed:
            status = int(entry["exit_code"]) if entry.get("exit_code") is not None else None
            code, signal = (None, None) if status is None else _wait_status(status)
            job = Job(
                job_id=int(entry["job_id"]),
                name=str(entry.get("name", "")),
                state=_state(str(entry["job_state"])),
                exit_code=code,
                signal=signal,
                nodes=str(entry.get("nodes") or ""),
                reason=_text(str(entry.get("state_reason") or "None")),
            )
            jobs[job.job_id] = job
    except (ValueError, KeyError, TypeError) as error:
        raise SlurmError(f"expected squeue --json to print its jobs, found {text[:80]!r} ({error})") from None
    return jobs


def _wait_status(status: int) -> tuple[int | None, int | None]:
    """A raw wait status: (exit code, None) for a normal exit, (None, signal) for a killed process."""
    signal = status & 0x7F
    return (status >> 8, None) if signal == 0 else (None, signal)


def parse_scontrol_job(text: str) -> Job:
    """`scontrol show job ID`: the job's `Key=Value` words."""
    words = dict(_WORD.findall(text))
    try:
        code, signal = (int(part) for part in words["ExitCode"].split(":"))
        return Job(
            job_id=int(words["JobId"]),
            name=words.get("JobName", ""),
            state=_state(words["JobState"]),
            exit_code=None if signal else code,
            signal=signal or None,
            nodes=_text(words.get("NodeList", "")),
            reason=_text(words.get("Reason", "")),
        )
    except (KeyError, ValueError):
        found = text[:80]
        raise SlurmError(f"expected scontrol show job to print JobId, JobState and ExitCode, found {found!r}") from None


def parse_sacct(text: str) -> dict[int, Job]:
    """`sacct -c --parsable2 --noheader -o JobID,JobName,State,NodeList`: the completion records, by id
    (a job recorded twice, as a requeued one is: its last record)."""
    jobs = {}
    for line in text.splitlines():
        fields = line.split("|")
        if len(fields) != 4 or not fields[0].isdigit():
            continue
        job_id = int(fields[0])
        jobs[job_id] = Job(job_id, fields[1], _state(fields[2]), nodes=_text(fields[3]))
    return jobs


def _run(command: Sequence[str], what: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(command), capture_output=True, text=True, check=False, timeout=COMMAND_TIMEOUT_SECONDS
        )
    except FileNotFoundError:
        raise SlurmError(
            f"expected Slurm's {command[0]} on PATH to {what}, found none",
            hint=f"install Slurm's client commands (Debian: slurm-client) and set {SLURM_CONF_ENV} to the "
            "cluster's slurm.conf",
        ) from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{command[0]} did not answer within {COMMAND_TIMEOUT_SECONDS} s (to {what})") from None


def _message(result: subprocess.CompletedProcess[str]) -> str:
    """What a failed Slurm command said, on one line, without its `sbatch: error:` prefixes."""
    lines = [re.sub(r"^\w+: error: ", "", line).strip() for line in (result.stderr or result.stdout).splitlines()]
    return "; ".join(line for line in lines if line) or f"exit code {result.returncode}"


def submit(request: JobRequest) -> int:
    """Submit a batch job; its id. A request the cluster refuses is a SlurmError saying why."""
    result = _run(request.sbatch_args(), f"submit {request.name}")
    if result.returncode != 0:
        hint = "`sinfo -o '%P %D %G'` lists the partitions, their nodes and GPUs; --slurm-partition picks another"
        if SLURM_CONF_ENV not in os.environ:
            hint = f"set {SLURM_CONF_ENV} to the cluster's slurm.conf"
        raise SlurmError(f"sbatch refused stage {request.name!r} ({request.describe()}): {_message(result)}", hint=hint)
    return parse_job_id(result.stdout)


def jobs(ids: Collection[int]) -> dict[int, Job]:
    """The jobs `ids` as Slurm reports them now; ids Slurm no longer knows are left out."""
    if not ids:
        return {}
    result = _run(["squeue", "--json"], "list the jobs")
    if result.returncode != 0:
        raise SlurmError(f"squeue --json failed: {_message(result)}", hint=f"is {SLURM_CONF_ENV} the cluster's?")
    found = {job_id: job for job_id, job in parse_squeue_json(result.stdout).items() if job_id in ids}
    for job_id in sorted(set(ids) - set(found)):
        shown = _run(["scontrol", "show", "job", str(job_id)], f"show job {job_id}")
        if shown.returncode == 0:
            found[job_id] = parse_scontrol_job(shown.stdout)
    missing = set(ids) - set(found)
    if missing:
        found.update(_completion_records(missing))
    return found


def _completion_records(ids: Collection[int]) -> Mapping[int, Job]:
    listing = ",".join(str(job_id) for job_id in sorted(ids))
    result = _run(
        ["sacct", "-c", "--parsable2", "--noheader", "-o", "JobID,JobName,State,NodeList", f"--jobs={listing}"],
        "read the job-completion records",
    )
    if result.returncode != 0:
        return {}  # no completion records on this cluster
    return {job_id: job for job_id, job in parse_sacct(result.stdout).items() if job_id in ids}


def cancel(ids: Collection[int]) -> None:
    """scancel the jobs (Slurm signals their processes: SIGTERM, then SIGKILL after KillWait)."""
    if not ids:
        return
    result = _run(["scancel", *map(str, sorted(ids))], "cancel jobs")
    if result.returncode != 0:
        raise SlurmError(f"scancel {' '.join(map(str, sorted(ids)))} failed: {_message(result)}")
