"""Nothing a stage starts outlives it: real pytest processes, real grandchildren, real SIGKILLs, watched
in /proc (ci_tool/run/parent_death.py)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ci_tool.run import parent_death, reaper
from ci_tool.run.invocation import RunSettings
from ci_tool.run.stage_runner import run_stage
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db

WAIT_SECONDS = 300  # a safety net for a busy machine, not a measure: the waits end when /proc says so

linux_only = pytest.mark.skipif(
    not parent_death.supported() or not Path("/proc/self/stat").exists(),
    reason="the parent-death signal and /proc are Linux's",
)

# A test that starts a grandchild and leaves it running; the pid goes to a file written in one step.
LEAKY_CASES = """\
import os
import signal
import subprocess
import time
from pathlib import Path


def _start_sleeper():
    sleeper = subprocess.Popen(["sleep", "1000"])
    Path("sleeper.pid.part").write_text(str(sleeper.pid))
    os.replace("sleeper.pid.part", "sleeper.pid")


def test_leaves_a_sleeper():
    _start_sleeper()


def test_slow_with_a_sleeper():
    _start_sleeper()
    Path("slow.pid.part").write_text(str(os.getpid()))
    os.replace("slow.pid.part", "slow.pid")
    if os.environ.get("KILL_CI_TOOL") == "1":  # the test kills its parent, ci-tool
        os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(600)
"""

# A test that starts a daemon as daemons start: fork, setsid, fork again; the first two processes exit, so the
# daemon belongs to no group and no process of the stage. Its pid goes to a file written in one step.
DAEMON_CASES = """\
import subprocess
import sys
import time
from pathlib import Path

DAEMON = (
    "import os, sys, time\\n"
    "if os.fork(): sys.exit(0)\\n"
    "os.setsid()\\n"
    "if os.fork(): os._exit(0)\\n"
    "open('daemon.pid.part', 'w').write(str(os.getpid()))\\n"
    "os.replace('daemon.pid.part', 'daemon.pid')\\n"
    "time.sleep(600)\\n"
)


def test_starts_a_daemon():
    subprocess.run([sys.executable, "-c", DAEMON], check=True)
    while not Path("daemon.pid").exists():
        time.sleep(0.05)
"""


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting for its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def wait_until_gone(*pids: int) -> list[int]:
    """The pids still running after the waits ends (empty: all ended)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if running(pid)]


def pid_in(path: Path) -> int:
    return int(path.read_text())


@pytest.fixture
def leaky_suite(suite: Path) -> Path:
    (suite / "cases" / "case_leaky.py").write_text(LEAKY_CASES)
    (suite / "test-db" / "l0_leaky.yml").write_text(
        "version: 0.0.1\nl0_leaky:\n- condition: {}\n  tests: [cases/case_leaky.py::test_leaves_a_sleeper]\n"
    )
    return suite


@pytest.fixture
def slow_leaky_suite(slow_suite: Any, leaky_suite: Path) -> Any:
    """The slow suite (slow.yml) whose slow test leaves a grandchild running."""
    (leaky_suite / "test-db" / "l0_slow.yml").write_text(
        "version: 0.0.1\nl0_slow:\n- condition: {}\n  tests: [cases/case_leaky.py::test_slow_with_a_sleeper]\n"
    )
    return slow_suite


@linux_only  # the check reads /proc
def test_a_process_a_test_leaves_running_ends_with_the_stage(leaky_suite: Path) -> None:
    db = load_test_db(leaky_suite / "test-db")
    plan = Planner(db, {}).stage_of_list(parse_stage_name("CPU-Generic-1"), "l0_leaky")
    result = run_stage(plan, RunSettings(leaky_suite, leaky_suite / "out", "r1"))
    sleeper = pid_in(leaky_suite / "sleeper.pid")
    assert (result.state, wait_until_gone(sleeper)) == ("passed", [])


@linux_only
@pytest.mark.parametrize("killer", ["from-outside", "by-its-test"])
def test_a_sigkilled_ci_tool_leaves_no_pytest_and_no_grandchild_behind(
    slow_leaky_suite: Any, monkeypatch: pytest.MonkeyPatch, killer: str
) -> None:
    slow_suite = slow_leaky_suite
    monkeypatch.setenv("KILL_CI_TOOL", "1" if killer == "by-its-test" else "0")
    slow_suite.start([sys.executable, "-m", "ci_tool", "stage", "run", "CPU-Generic-1", "--catalog", "slow.yml"])
    pytest_pid = slow_suite.wait_for_slow_test()
    sleeper = pid_in(slow_suite.root / "sleeper.pid")
    if killer == "from-outside":
        assert running(pytest_pid) and running(sleeper)
        os.kill(slow_suite.process.pid, signal.SIGKILL)
    slow_suite.process.communicate(timeout=WAIT_SECONDS)
    assert (slow_suite.process.returncode, wait_until_gone(pytest_pid, sleeper)) == (-signal.SIGKILL, [])


@linux_only
def test_a_child_whose_parent_died_before_the_signal_was_set_ends_at_once() -> None:
    prepare = parent_death.child_preparation(parent_pid=os.getpid() + 1_000_000)  # a parent that is gone
    assert prepare is not None
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        try:
            prepare()
            time.sleep(600)
        finally:
            os._exit(0)
    _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == parent_death.PARENT_DEATH_SIGNAL


@pytest.fixture
def daemon_suite(suite: Path) -> Iterator[Path]:
    (suite / "cases" / "case_daemon.py").write_text(DAEMON_CASES)
    (suite / "test-db" / "l0_daemon.yml").write_text(
        "version: 0.0.1\nl0_daemon:\n- condition: {}\n  tests: [cases/case_daemon.py]\n"
    )
    yield suite
    daemon = suite / "daemon.pid"
    if daemon.exists() and running(pid_in(daemon)):  # what a failed test leaves: ours to end
        os.kill(pid_in(daemon), signal.SIGKILL)


@linux_only
def test_a_setsid_daemon_a_test_starts_ends_with_the_stage(daemon_suite: Path) -> None:
    db = load_test_db(daemon_suite / "test-db")
    plan = Planner(db, {}).stage_of_list(parse_stage_name("CPU-Generic-1"), "l0_daemon")
    result = run_stage(plan, RunSettings(daemon_suite, daemon_suite / "out", "r1"))
    daemon = pid_in(daemon_suite / "daemon.pid")
    assert (result.state, wait_until_gone(daemon)) == ("passed", [])


@linux_only
def test_while_its_tests_run_ci_tool_is_undumpable_and_after_as_before() -> None:
    """A same-user test cannot read ci-tool's environment (the history's password) or memory through /proc."""
    before = reaper.dumpable()
    with reaper.subreaper():
        during = reaper.dumpable()
    assert (before, during, reaper.dumpable()) == (True, False, True)
