"""A real Slurm cluster for the whole session (fake_cluster.py) from Debian's packages, which .ci/run
installs: started in a fresh temporary folder, stopped by pid at the end; every test here skips, saying
why, where the packages are missing or the suite does not run as root. And a project of stages that report
where and how they ran."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.ci_tool.run.prompt_signals import reset_to_prompt_defaults

NODES = ("n1", "n2")  # the nodes stages spread over, set down and retried on
PARTITIONS = {
    "cpu": NODES,
    "gb200-flex": NODES,  # GB200-8_GPUs-2_Nodes-PyTorch: 4 GPUs on each of 2 nodes
    "dgx-b200-flex": NODES,  # DGX_B200-8_GPUs-PyTorch: 8 GPUs on one node, which no node has
    "slow": ("n3",),  # the timeout test's job, out of the way of the nodes other tests set down
}
GPUS_PER_NODE = 4
WAIT_SECONDS = 180.0  # for a run, a job or a file: generous on a shared 2-core machine


def _load_fake_cluster() -> ModuleType:
    path = Path(__file__).with_name("fake_cluster.py")
    spec = importlib.util.spec_from_file_location("ci_tool_tests_fake_cluster", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


fake_cluster = _load_fake_cluster()


class _Shared:
    """The session's cluster (and the timeout test's early run), started once: right after collection when
    the timeout test is among the tests to run, so that its minute passes while the rest of the suite runs;
    else by the first test that asks. Stopped when the session ends."""

    def __init__(self) -> None:
        self.cluster: object | None = None
        self.skip_reason: str | None = None
        self.folder: Path | None = None
        self.saved_env: dict[str, str] | None = None
        self.slow: tuple[Path, subprocess.Popen[str]] | None = None

    def start(self) -> object:
        if self.skip_reason is not None:
            pytest.skip(self.skip_reason)
        if self.cluster is None:
            self.skip_reason = fake_cluster.missing_slurm()
            if self.skip_reason is None and os.geteuid() != 0:
                self.skip_reason = "a fake Slurm cluster needs root (slurmd and munged run as root and munge)"
            if self.skip_reason is not None:
                pytest.skip(self.skip_reason)
            self.folder = Path(tempfile.mkdtemp(prefix="ci-tool-slurm-"))
            self.folder.chmod(0o755)  # munged runs as the munge user and must reach its socket folder
            self.cluster = fake_cluster.start_cluster(self.folder, partitions=PARTITIONS, gpus=GPUS_PER_NODE)
            self.saved_env = dict(os.environ)
            # read before the clear: the cluster's environment is built from os.environ (PATH and the rest)
            cluster_env = dict(self.cluster.env)  # type: ignore[attr-defined]
            os.environ.clear()  # no SLURM_* variable of an allocation the suite may run in
            os.environ.update(cluster_env)
        return self.cluster

    def start_slow_run(self) -> tuple[Path, subprocess.Popen[str]]:
        if self.slow is None:
            self.start()
            assert self.folder is not None
            root = self.folder / "slow-project"  # removed with the cluster's folder
            args = ("stage", "run", "CPU-Generic-Slow-1", "--catalog", "stages.yml", "--executor", "slurm")
            self.slow = root, _start_ci_tool(make_project(root), *args, "--slurm-partition", "slow")
        return self.slow

    def stop(self) -> None:
        if self.slow is not None and self.slow[1].poll() is None:
            self.slow[1].kill()
            self.slow[1].wait()
        if self.cluster is not None:
            self.cluster.stop()  # type: ignore[attr-defined]
            self.cluster = None
        if self.saved_env is not None:
            os.environ.clear()
            os.environ.update(self.saved_env)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


_shared = _Shared()
SLOW_TEST = "test_a_job_past_its_time_limit_fails_its_stage_naming_the_limit_and_keeps_what_finished"


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly or not any(item.name == SLOW_TEST for item in session.items):
        return
    with contextlib.suppress(pytest.skip.Exception):  # the tests skip, saying why, when they run
        _shared.start_slow_run()


def pytest_sessionfinish(session: pytest.Session) -> None:
    _shared.stop()


@pytest.fixture
def slurm_cluster(monkeypatch: pytest.MonkeyPatch) -> object:
    """The session's cluster (fake_cluster.FakeCluster); SLURM_CONF names it. Set again for each test: the
    suite's isolation hook (tests/ci_tool/conftest.py) removes every SLURM_* variable before a test's set-up,
    and the cluster may have started before that, right after collection."""
    cluster = _shared.start()
    for name, value in cluster.env.items():  # type: ignore[attr-defined]
        if name.startswith("SLURM_"):
            monkeypatch.setenv(name, value)
    return cluster


CATALOG = """\
version: 1
families:
- {name: CPU-Generic, platform: cpu, context: l0_spread, splits: 2, executor: slurm}
- {name: CPU-Generic-Down, platform: cpu, context: l0_down, splits: 1, executor: slurm}
- {name: CPU-Generic-Hold, platform: cpu, context: l0_hold, splits: 1, executor: slurm}
- {name: CPU-Generic-Slow, platform: cpu, context: l0_slow, splits: 1, timeout_minutes: 1, executor: slurm}
- {name: CPU-Generic-Plant, platform: cpu, context: l0_plant, splits: 1, executor: slurm}
- {name: CPU-Generic-Daemon, platform: cpu, context: l0_daemon, splits: 1, executor: slurm}
- {name: GB200-8_GPUs-2_Nodes-PyTorch, platform: 'auto:gb200-flex', context: l0_nodes, splits: 1, executor: slurm}
- {name: DGX_B200-8_GPUs-PyTorch, platform: 'auto:dgx-b200-flex', context: l0_nodes, splits: 1, executor: slurm}
- {name: CPU-Generic-Where, platform: cpu, context: l0_nodes, splits: 1, executor: slurm}
- {name: CPU-Generic-PerfSanity, platform: cpu, context: l0_nodes, splits: 1, executor: slurm}
"""


def _context(name: str, *tests: str) -> str:
    lines = "".join(f"  - cases/case_slurm.py::{test}\n" for test in tests)
    return f"{name}:\n- condition:\n    terms: {{stage: pre_merge}}\n  tests:\n{lines}"


TEST_DB = "version: 0.0.1\n" + "".join(
    (
        _context("l0_spread", "test_spread_1", "test_spread_2"),
        _context("l0_down", "test_survives_its_node_going_down"),
        _context("l0_hold", "test_done", "test_hold"),
        _context("l0_slow", "test_quick", "test_sleeps_past_the_limit"),
        _context("l0_nodes", "test_where_it_runs"),
        _context("l0_plant", "test_plants_a_result_for_its_own_job"),
        _context("l0_daemon", "test_leaves_a_daemon_to_pass_its_job"),
    )
)

# The stages' tests: each writes where and how it ran to out/<name>-<job id>.json, and waits for files
# the test around it writes (never for time to pass).
CASES = """\
import json
import os
import time
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "out"
KEYS = ("SLURMD_NODENAME", "SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_JOB_NUM_NODES", "SLURM_STEP_NUM_NODES",
        "SLURM_PROCID", "CUDA_VISIBLE_DEVICES", "CI_TOOL_STAGE", "SLURM_CPUS_ON_NODE")


def record(name):
    OUT.mkdir(exist_ok=True)
    facts = {key: os.environ.get(key) for key in KEYS}
    final = OUT / f"{name}-{facts['SLURM_JOB_ID']}.json"
    partial = final.with_name(final.name + ".partial")
    partial.write_text(json.dumps(facts))
    partial.replace(final)  # whole or absent: the tests read these files while the jobs run
    return facts


def wait_for(ready, seconds=180):
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, "waited too long"
        time.sleep(0.05)


def test_spread_1():
    record("spread")
    wait_for(lambda: len(list(OUT.glob("spread-*.json"))) == 2)  # both shards run at once


test_spread_2 = test_spread_1


def test_survives_its_node_going_down():
    record("down")
    if not (OUT / "attempted").exists():  # the first attempt: hold the node until it is set down
        (OUT / "attempted").write_text("")
        wait_for(lambda: False, seconds=600)


def test_done():
    pass


def test_hold():
    record("hold")
    wait_for(lambda: False, seconds=600)


def test_quick():
    pass


def test_sleeps_past_the_limit():
    record("slow")
    wait_for(lambda: False, seconds=600)


def test_where_it_runs():
    record("where")


class RunsCode:  # unpickled, it creates out/pwned, in whichever process loads it

    def __reduce__(self):
        return (open, (str(OUT / "pwned"), "w"))


# A daemon (fork, setsid, fork) that waits for the job program's genuine result, takes its token, says the stage
# passed and puts the file back; argv: the result file, the daemon's pid file.
DAEMON = (
    "import json, os, sys, time\\n"
    "if os.fork(): sys.exit(0)\\n"
    "os.setsid()\\n"
    "if os.fork(): os._exit(0)\\n"
    "result, pid = sys.argv[1], sys.argv[2]\\n"
    "open(pid + '.part', 'w').write(str(os.getpid())); os.replace(pid + '.part', pid)\\n"
    "while not os.path.exists(result): time.sleep(0.01)\\n"
    "report = json.load(open(result))\\n"
    "report['result']['state'] = 'passed'\\n"
    "open(result + '.part', 'w').write(json.dumps(report)); os.replace(result + '.part', result)\\n"
)


def test_leaves_a_daemon_to_pass_its_job():
    import subprocess, sys
    job_id = record("daemon")["SLURM_JOB_ID"]
    (folder,) = {path.parent for path in Path.cwd().glob("**/slurm/job.sh")}
    pid = OUT / f"daemon-{job_id}.pid"
    subprocess.run([sys.executable, "-c", DAEMON, str(folder / f"{job_id}.result.json"), str(pid)], check=True)
    wait_for(pid.exists)
    assert False, "this test fails its stage"


def test_plants_a_result_for_its_own_job():
    # A hostile test: before its job ends it writes the job's result file, as a pickle that runs code and as a
    # report that says the stage passed, then kills the job program so that no genuine result replaces it.
    import pickle, signal
    facts = record("plant")
    job_id = facts["SLURM_JOB_ID"]
    (folder,) = {path.parent for path in Path.cwd().glob("**/slurm/job.sh")}
    (folder / f"{job_id}.result.pickle").write_bytes(pickle.dumps(RunsCode()))
    passed = {"stage": "CPU-Generic-Plant-1", "state": "passed", "reason": "", "tests": [], "uncollected": [],
              "processes": [], "started_at": 0, "duration_seconds": 0, "results_dir": str(folder.parent),
              "details": {}, "predicted_seconds": 0}
    report = {"result": passed, "job_id": job_id, "node": "n1", "started_at": 0, "finished_at": 0, "token": "0" * 32}
    (folder / f"{job_id}.result.json").write_text(json.dumps(report))
    os.kill(os.getppid(), signal.SIGKILL)  # the job program
"""


def make_project(root: Path) -> Path:
    """A project whose stages (all `executor: slurm`) report where and how they ran."""
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "case_slurm.py").write_text(CASES)
    (root / "pytest.ini").write_text("[pytest]\npython_files = case_*.py\naddopts = -p no:cacheprovider\n")
    (root / "test-db").mkdir()
    (root / "test-db" / "l0_slurm.yml").write_text(TEST_DB)
    (root / "stages.yml").write_text(CATALOG)
    return root


@pytest.fixture
def slurm_project(tmp_path: Path, slurm_cluster: object, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh project, the working directory (its history the project's own)."""
    root = make_project(tmp_path / "project")
    monkeypatch.chdir(root)
    monkeypatch.delenv("CI_TOOL_HISTORY", raising=False)
    return root


def _start_ci_tool(root: Path, *args: str) -> subprocess.Popen[str]:
    log = open(root / "ci-tool.log", "w")  # noqa: SIM115 - the child writes it; closed with the process
    env = {key: value for key, value in os.environ.items() if key != "CI_TOOL_HISTORY"}  # the project's own
    command = [sys.executable, "-m", "ci_tool", *args]
    # as from a prompt: the Ctrl-C test's SIGINT must not meet a disposition this test run inherited
    return subprocess.Popen(
        command, cwd=root, stdout=log, stderr=subprocess.STDOUT, text=True, env=env, preexec_fn=reset_to_prompt_defaults
    )


StartCiTool = Callable[..., "subprocess.Popen[str]"]


@pytest.fixture
def start_ci_tool() -> Iterator[StartCiTool]:
    """`start_ci_tool(root, *args)`: `ci-tool ARGS` as its own process in `root` (output: root/ci-tool.log);
    one still running at the end is killed by its pid."""
    started: list[subprocess.Popen[str]] = []

    def start(root: Path, *args: str) -> subprocess.Popen[str]:
        started.append(_start_ci_tool(root, *args))
        return started[-1]

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def _wait_for(ready: Callable[[], bool], what: str, seconds: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds:.0f} s for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def wait_for() -> Callable[..., None]:
    """`wait_for(ready, what)`: poll `ready()` (a job state, a file) until true, or fail naming `what`."""
    return _wait_for


@pytest.fixture
def slow_run(slurm_cluster: object) -> tuple[Path, object]:
    """CPU-Generic-Slow-1 (timeout_minutes: 1) as a Slurm job on the `slow` partition, started as early as
    the session allows (_Shared): Slurm's time limits have a one-minute granularity and are checked every
    30 s, so the job runs 60 to 90 s."""
    return _shared.start_slow_run()
