"""The Slurm executor: each stage (a shard of a family) one batch job on the cluster SLURM_CONF names.

    job          name = the stage; partition = --slurm-partition, else the platform's pool (auto:<pool>);
                 --nodes = M of M_Nodes; --gres=gpu:N/M per node; --time = the stage's timeout;
                 --no-requeue; stdout and stderr in <stage folder>/slurm/<job id>.out|.err
    the job      `python -m ci_tool.run.slurm_job`: ci-tool's stage runner on the plan made here, its
                 processes under srun across the allocation when M > 1 (invocation.py)
    watching     squeue (every POLL_SECONDS); a job's result file is read only once Slurm says the job
                 ended (COMPLETED, CANCELLED or TIMEOUT: the ends its job program exits on its own), and
                 taken only with the token of that submission (slurm_job.py): its tests, which can write
                 any file the job can, cannot hand back a result of their own

How a job that ended is read (`verdict`):
    infra fault  NODE_FAIL, BOOT_FAIL, PREEMPTED, or a job that failed before its runner started (a
                 failed launch): submitted again with --exclude of its nodes, at most INFRA_RETRIES times
                 (TensorRT-LLM's SLURM_INFRA_RETRY_MAX); the attempt's files move to slurm/attempt-<K>/.
                 (A script that exited non-zero before starting the runner ran: that is no launch failure.)
                 A stage that passed only after one is UNSTABLE, never green, and its reason says why.
    timeout      TIMEOUT: the stage fails, its reason names the limit; the tests that finished are kept
    cancelled    a job someone else scancelled (`/bot kill`): the stage is interrupted
    otherwise    the job's results, as its runner wrote them; none (or a file its runner did not write):
                 the stage fails, naming the job's log (or what is wrong with the file)
A job pending for a reason it can never leave (NEVER_STARTS: more nodes than its partition has) is
cancelled and its stage fails. Ctrl-C (or SIGTERM) scancels every job of the run, waits for them to
end and keeps what each finished; fail-fast scancels the running ones, which end skipped.
"""

from __future__ import annotations

import json
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path

from ci_tool.atomic import write_text_atomically
from ci_tool.errors import SlurmError
from ci_tool.layout import SLURM_INFRA_RETRIES
from ci_tool.outcomes import StageState
from ci_tool.run import slurm
from ci_tool.run.executor import Finished, ReadyStage
from ci_tool.run.invocation import RunSettings
from ci_tool.run.pipeline import StageOutcome
from ci_tool.run.slurm import Job, JobRequest, JobState
from ci_tool.run.slurm_job import JobFiles, JobReport, JobSpec, new_token, read_report, write_spec
from ci_tool.run.stage_runner import StageResult, result_json
from ci_tool.stages.executors import pool_of
from ci_tool.stages.names import StageName

POLL_SECONDS = 1.0  # between two squeue calls
STOP_POLL_SECONDS = 0.2  # between two squeue calls while cancelled jobs end
INTERRUPT_WAIT_SECONDS = 120.0  # for cancelled jobs to end (Slurm's KillWait is 30 s by default)
SLURM_SILENCE_SECONDS = 300.0  # squeue failing this long ends the run (its error is raised)
INFRA_STATES = frozenset({JobState.NODE_FAIL, JobState.BOOT_FAIL, JobState.PREEMPTED})
NON_ZERO_EXIT = "NonZeroExitCode"  # the reason of a job whose script exited non-zero: it ran
# The ends after which a result file can be the job program's: it exits 0 once the result is written, also
# when scancel or the time limit interrupt it (SIGTERM); after another end the file is something else's.
RESULT_STATES = frozenset({JobState.COMPLETED, JobState.CANCELLED, JobState.TIMEOUT})


class JobVerdict(Enum):
    RESULTS = "results"
    INFRA = "infra"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    FAILED = "failed"


def verdict(job: Job, *, started: bool, report: JobReport | None) -> JobVerdict:
    """What an ended job means for its stage (see the module docstring)."""
    launch_failed = job.state is JobState.FAILED and not started and job.reason != NON_ZERO_EXIT
    if job.state in INFRA_STATES or launch_failed:
        return JobVerdict.INFRA
    if job.state is JobState.TIMEOUT:
        return JobVerdict.TIMEOUT
    if job.state is JobState.CANCELLED:
        return JobVerdict.CANCELLED
    return JobVerdict.RESULTS if report is not None else JobVerdict.FAILED


def job_program_exited(job: Job) -> bool:
    """Whether the job ended as its job program does once it has written its result (RESULT_STATES)."""
    return job.state in RESULT_STATES


def gpus_per_node(name: StageName) -> int:
    """N/M of N_GPUs-M_Nodes: `--gres=gpu:K` asks for K on each node."""
    if name.gpu_count % name.node_count:
        raise SlurmError(
            f"expected the {name.gpu_count} GPUs of {name.name!r} to split evenly over its {name.node_count} "
            "nodes, found a remainder",
            hint="name a GPU count that is a multiple of the node count",
        )
    return name.gpu_count // name.node_count


def job_files(settings: RunSettings) -> JobFiles:
    """A stage's Slurm files: slurm/ in its results folder, by absolute path (the job starts elsewhere)."""
    return JobFiles((settings.results_dir / "slurm").absolute())


def job_request(ready: ReadyStage, files: JobFiles, *, run_id: str, partition: str | None) -> JobRequest:
    """The batch job of a stage (sbatch's %j in the output names is the job id)."""
    name = ready.plan.name
    return JobRequest(
        name=name.name,
        script=files.script,
        workdir=ready.settings.rootdir,
        stdout=files.stdout("%j"),
        stderr=files.stderr("%j"),
        partition=partition or pool_of(ready.platform) or None,
        nodes=name.node_count,
        gpus_per_node=gpus_per_node(name),
        time_minutes=ready.timeout_minutes,
        comment=f"ci-tool run {run_id}",
        exclusive=name.policy.runs_alone,
    )


def job_script(spec: JobSpec) -> str:
    python = shlex.quote(spec.settings.python)
    return (
        "#!/bin/sh\n"
        f"# ci-tool: stage {spec.plan.name.name} of run {spec.settings.run_id} (ci_tool/run/slurm_executor.py)\n"
        f"exec {python} -m ci_tool.run.slurm_job {shlex.quote(str(spec.files.spec))}\n"
    )


@dataclass
class _Attempt:
    job_id: int
    submitted_at: float
    token: str  # what its job program's report carries (slurm_job.JobSpec)
    job: Job | None = None  # as Slurm last reported it


@dataclass
class _Stage:
    """A started stage: its request and its attempts, the last one current."""

    ready: ReadyStage
    files: JobFiles
    request: JobRequest
    attempts: list[_Attempt] = field(default_factory=list)
    faults: list[dict[str, object]] = field(default_factory=list)  # infra faults retried
    cancelled: str | None = None  # why we cancelled it (fail-fast), when we did

    @property
    def name(self) -> str:
        return self.ready.plan.name.name

    @property
    def current(self) -> _Attempt:
        return self.attempts[-1]


class SlurmExecutor:
    """Every stage starts at once as a Slurm job; each is reported when its job ends."""

    def __init__(
        self,
        *,
        run_id: str,
        partition: str | None = None,
        infra_retries: int = SLURM_INFRA_RETRIES,
        note: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.run_id, self.partition, self.infra_retries, self.note = run_id, partition, infra_retries, note
        self.active: list[_Stage] = []
        self.done: list[Finished] = []
        self.polled_at = 0.0
        self.unanswered_since: float | None = None  # when squeue began to fail, while it does

    def mismatch(self, name: StageName) -> str | None:
        return None if name.is_test else f"{name.kind.value} stages run only on CI runners"

    def can_start(self, name: StageName) -> bool:
        return True  # the cluster queues what it cannot run yet

    def running(self) -> int:
        return len(self.active) + len(self.done)

    def start(self, ready: ReadyStage) -> None:
        name = ready.plan.name
        files = job_files(ready.settings)
        try:
            request = job_request(ready, files, run_id=self.run_id, partition=self.partition)
        except SlurmError as error:
            self.done.append(StageOutcome(name.name, StageState.FAILED, str(error)))
            return
        self._submit(_Stage(ready, files, request))

    def _submit(self, stage: _Stage) -> None:
        """Submit the stage's job, with a new token (the job deletes its plan file once it has read it)."""
        spec = JobSpec(stage.ready.plan, stage.ready.settings, stage.files, new_token())
        write_spec(spec)
        write_text_atomically(stage.files.script, job_script(spec), what="the Slurm job script")
        try:
            job_id = slurm.submit(stage.request)
        except SlurmError as error:
            reason = str(error) + (f" (after {self._faults(stage)})" if stage.faults else "")
            self.done.append(StageOutcome(stage.name, StageState.FAILED, reason))
            return
        stage.attempts.append(_Attempt(job_id, time.time(), spec.token))
        if stage not in self.active:
            self.active.append(stage)
        self.note(f"{stage.name}: Slurm job {job_id} submitted ({stage.request.describe()})")

    def next_finished(self) -> Finished:
        try:
            while not self.done:
                self._wait()
                self._poll()
        except KeyboardInterrupt:
            self._stop_all()
        return self.done.pop(0)

    def cancel(self, reason: str) -> None:
        for stage in self.active:
            stage.cancelled = reason
        slurm.cancel([stage.current.job_id for stage in self.active])

    def _wait(self) -> None:
        """Until it is time to ask Slurm again (a result file that appears says nothing: a test may write it)."""
        remaining = POLL_SECONDS - (time.monotonic() - self.polled_at)
        if remaining > 0:
            time.sleep(remaining)

    def _poll(self) -> None:
        self.polled_at = time.monotonic()
        try:
            known = slurm.jobs([stage.current.job_id for stage in self.active])
            self.unanswered_since = None
        except SlurmError as error:  # a busy or restarting controller: go on with the result files
            self.unanswered_since = self.unanswered_since or time.monotonic()
            if time.monotonic() - self.unanswered_since > SLURM_SILENCE_SECONDS:
                raise
            self.note(f"warning: {error}; asking again")
            known = None
        for stage in list(self.active):
            attempt = stage.current
            attempt.job = known.get(attempt.job_id, attempt.job) if known is not None else attempt.job
            job = attempt.job
            if job is None and known is None:
                continue  # Slurm did not answer: nothing is known of this job yet
            if job is None:
                job = Job(attempt.job_id, stage.name, JobState.FAILED, reason="Slurm no longer knows the job")
            if job.ended:
                self._ended_job(stage, job)
            elif job.state is JobState.PENDING and job.reason in slurm.NEVER_STARTS:
                slurm.cancel([job.job_id])
                self.active.remove(stage)
                self.done.append(
                    StageOutcome(
                        stage.name,
                        StageState.FAILED,
                        f"Slurm job {job.job_id} can never start: it pends with reason {job.reason} "
                        f"({stage.request.describe()}); cancelled",
                    )
                )

    @staticmethod
    def _report(stage: _Stage) -> tuple[JobReport | None, str]:
        """The report of the stage's ended job, or None and, for a file its job program did not write, why."""
        try:
            attempt = stage.current
            return read_report(stage.files.result(attempt.job_id), job_id=attempt.job_id, token=attempt.token), ""
        except SlurmError as error:
            return None, str(error)

    def _ended_job(self, stage: _Stage, job: Job) -> None:
        self.active.remove(stage)
        report, refused = self._report(stage)
        if report is not None and not job_program_exited(job):
            report, refused = None, f"Slurm job {job.job_id} ended {job.state}, so its job program did not write it"
        found = verdict(job, started=stage.files.started(job.job_id).exists(), report=report)
        if stage.cancelled is not None:
            self.done.append(StageOutcome(stage.name, StageState.SKIPPED, stage.cancelled))
            return
        if found is JobVerdict.INFRA:
            stage.faults.append(
                {"job_id": job.job_id, "state": job.state.value, "nodes": job.nodes, "reason": job.reason}
            )
            if len(stage.faults) <= self.infra_retries:
                self._retry(stage, job)
                return
        if found is JobVerdict.RESULTS and report is not None:
            state, reason = report.result.state, report.result.reason
            if stage.faults and state in (StageState.PASSED, StageState.UNSTABLE):
                state, reason = StageState.UNSTABLE, f"passed after an infra retry: {self._faults(stage)}"
            self.done.append(self._result(stage, report, state, reason))
            return
        state, reason = self._failure(stage, job, found)
        reason = f"{reason}; its result file was refused: {refused}" if refused else reason
        self.done.append(
            StageOutcome(stage.name, state, reason) if report is None else self._result(stage, report, state, reason)
        )

    def _retry(self, stage: _Stage, job: Job) -> None:
        attempt_dir = stage.files.folder / f"attempt-{len(stage.attempts)}"
        self._archive(stage, attempt_dir)
        stage.faults[-1]["files"] = str(attempt_dir)
        exclude = tuple(dict.fromkeys((*stage.request.exclude, *([job.nodes] if job.nodes else []))))
        stage.request = replace(stage.request, exclude=exclude)
        where = job.nodes or "?"
        self.note(f"{stage.name}: Slurm job {job.job_id} ended {job.state} on {where}, an infra fault; retrying")
        self._submit(stage)

    @staticmethod
    def _archive(stage: _Stage, attempt_dir: Path) -> None:
        """Move a failed attempt's results out of the stage folder (its JUnit dropped: CI collects *.xml)."""
        attempt_dir.mkdir(parents=True, exist_ok=True)
        for path in stage.ready.settings.results_dir.iterdir():
            if path.absolute() == stage.files.folder:
                continue
            if path.suffix == ".xml":
                path.unlink()
            else:
                shutil.move(str(path), attempt_dir / path.name)

    @staticmethod
    def _faults(stage: _Stage) -> str:
        """`Slurm job 12 ended NODE_FAIL on n2, 1 infra retry`."""
        jobs = "; ".join(f"Slurm job {f['job_id']} ended {f['state']} on {f['nodes'] or '?'}" for f in stage.faults)
        retries = min(len(stage.attempts) - 1, len(stage.faults))
        return f"{jobs}, {retries} infra retr{'y' if retries == 1 else 'ies'}"

    def _failure(self, stage: _Stage, job: Job, found: JobVerdict) -> tuple[StageState, str]:
        """The state and reason of a stage whose job gave no (usable) results."""
        if found is JobVerdict.TIMEOUT:
            limit = stage.request.time_minutes
            if limit is None:
                return StageState.FAILED, f"Slurm job {job.job_id} reached its partition's time limit"
            minutes = f"{limit} minute{'s' if limit != 1 else ''}"
            return StageState.FAILED, f"Slurm job {job.job_id} reached its time limit of {minutes} (--time={limit})"
        if found is JobVerdict.CANCELLED:
            return StageState.INTERRUPTED, f"Slurm job {job.job_id} was cancelled (scancel)"
        if found is JobVerdict.INFRA:
            return StageState.FAILED, f"an infra fault and no retry left: {self._faults(stage)}"
        code = f"exit code {job.exit_code}" if job.signal is None else f"signal {job.signal}"
        log = stage.files.stderr(job.job_id)
        return (
            StageState.FAILED,
            f"Slurm job {job.job_id} ended {job.state} ({code}) without the stage's results; see {log}",
        )

    def _result(self, stage: _Stage, report: JobReport, state: StageState, reason: str) -> StageResult:
        """The job's StageResult in its final state, with the jobs in its details (and result.json)."""
        jobs = [
            {
                "job_id": a.job_id,
                "state": a.job.state.value if a.job else None,
                "nodes": a.job.nodes if a.job else "",
                "submitted_at": round(a.submitted_at, 3),
            }
            for a in stage.attempts
        ]
        slurm_details = {
            "jobs": jobs,
            "partition": stage.request.partition,
            "started_at": round(report.started_at, 3),
            "finished_at": round(report.finished_at, 3),
            "collected_at": round(time.time(), 3),
        }
        details = {**report.result.details, "slurm": slurm_details, "infra_retries": list(stage.faults)}
        result = replace(report.result, state=state, reason=reason, details=details)
        folder = stage.ready.settings.results_dir
        text = json.dumps(result_json(result, stage.ready.plan), indent=1) + "\n"
        write_text_atomically(folder / "result.json", text, what="the stage's result.json")
        return result

    def _stop_all(self) -> None:
        """Ctrl-C: scancel every job of the run, wait for them to end, keep what each finished."""
        ids = [stage.current.job_id for stage in self.active]
        try:
            slurm.cancel(ids)
        except SlurmError as error:  # say so: these jobs may still run
            self.note(f"warning: {error}")
        self.note(f"interrupted: cancelled Slurm job{'s' if len(ids) != 1 else ''} {', '.join(map(str, ids))}")
        deadline = time.monotonic() + INTERRUPT_WAIT_SECONDS
        ended: set[int] = set()
        trusted: set[int] = set()  # the ended jobs whose result file can be their job program's
        try:
            while time.monotonic() < deadline:
                known = slurm.jobs(ids)
                ended = {i for i in ids if known.get(i) is None or known[i].ended}
                trusted = {i for i in ended if known.get(i) is None or job_program_exited(known[i])}
                if len(ended) == len(ids):
                    break
                time.sleep(STOP_POLL_SECONDS)
        except (KeyboardInterrupt, SlurmError):
            pass  # a second Ctrl-C, or Slurm not answering: stop waiting and keep what is there
        for stage in list(self.active):
            self.active.remove(stage)
            job_id = stage.current.job_id
            report, refused = self._report(stage) if job_id in trusted else (None, "")
            started = stage.files.started(job_id).exists()
            why = "ended without results" if started else "cancelled before it started"
            why = why if job_id in ended else f"did not end within {INTERRUPT_WAIT_SECONDS:.0f} s of scancel"
            why = f"{why}; its result file was refused: {refused}" if refused else why
            if report is None:
                outcome = StageOutcome(stage.name, StageState.INTERRUPTED, f"interrupted: Slurm job {job_id} {why}")
                self.done.append(outcome)
            else:
                reason = f"interrupted: Slurm job {job_id} cancelled"
                self.done.append(self._result(stage, report, StageState.INTERRUPTED, reason))
