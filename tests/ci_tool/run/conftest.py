"""Fixtures for runner tests: the slow suite to interrupt, and real pytest runs in a copy of the failing suite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ci_tool.run.prompt_signals import reset_to_prompt_defaults

RunPytest = Callable[..., subprocess.CompletedProcess[str]]
PROCESS_TIMEOUT_SECONDS = 300  # a safety net for a busy machine, not a measure: the waits end on events

# The slow suite: test_slow says it started, and which pytest process runs it, by a file written in one
# step; then it waits to be interrupted.
SLOW_CATALOG = """\
version: 1
families:
- {name: CPU-Generic, platform: cpu, context: l0_slow, splits: 1}
"""
SLOW_DB = "version: 0.0.1\nl0_slow:\n- condition: {}\n  tests: [cases/case_slow.py]\n"
SLOW_CASES = """\
import os
import time
from pathlib import Path


def test_quick():
    pass


def test_slow():
    Path("slow.pid.part").write_text(str(os.getpid()))
    os.replace("slow.pid.part", "slow.pid")
    time.sleep(600)
"""


def run_pytest_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A real pytest process in `cwd` with ci-tool's plugin loaded."""
    command = [sys.executable, "-m", "pytest", "-p", "ci_tool.run.plugin", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, timeout=120)


@dataclass
class SlowSuite:
    """A copy of the failing suite with the slow catalog (`slow.yml`, context l0_slow) and a process to
    interrupt in it."""

    root: Path
    process: subprocess.Popen[str] | None = None
    pytest_pid: int = 0

    def start(self, command: Sequence[str], *, ignore_sigint: bool = False, terminal: int | None = None) -> None:
        """Start `command` in the suite with SIGINT, SIGTERM and SIGHUP at their defaults, as from a shell
        prompt, whatever this test run inherited (a script's background job ignores SIGINT); or with
        SIGINT ignored; or with the pty end `terminal` as its controlling terminal and only output."""

        def prepare() -> None:
            reset_to_prompt_defaults()
            if ignore_sigint:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            if terminal is not None:
                os.login_tty(terminal)

        # preexec_fn only sets signal dispositions and the terminal: nothing that takes a lock after fork.
        pipe = subprocess.PIPE if terminal is None else None
        env = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # SIGABRT prints every thread's stack (`interrupt`)
        self.process = subprocess.Popen(
            command, cwd=self.root, env=env, stdout=pipe, stderr=pipe, text=True, preexec_fn=prepare
        )

    def wait_for_slow_test(self) -> int:
        """The pid of the pytest process once it runs test_slow; fails at once when the process ends first."""
        assert self.process is not None
        pid_file = self.root / "slow.pid"
        deadline = time.monotonic() + PROCESS_TIMEOUT_SECONDS
        while not pid_file.exists():
            if self.process.poll() is not None:
                out, err = self.process.communicate()
                pytest.fail(f"exited with code {self.process.returncode} before test_slow ran:\n{out}{err}")
            if time.monotonic() > deadline:
                pytest.fail(f"test_slow did not start within {PROCESS_TIMEOUT_SECONDS} s")
            time.sleep(0.05)
        self.pytest_pid = int(pid_file.read_text())
        return self.pytest_pid

    def interrupt(self, signum: int) -> tuple[str, str]:
        """Send `signum` to the process and wait for it to end: (stdout, stderr)."""
        assert self.process is not None
        os.kill(self.process.pid, signum)
        try:
            return self.process.communicate(timeout=PROCESS_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGABRT)  # where it hangs, from the fault handler
            _, err = self.process.communicate()
            pytest.fail(f"still running {PROCESS_TIMEOUT_SECONDS} s after {signal.Signals(signum).name}:\n{err}")

    def pytest_exit_codes(self) -> list[int | None]:
        """The exit code of each pytest process of the stage, from its result.json."""
        (result,) = self.root.glob("**/result.json")
        return [process["exit_code"] for process in json.loads(result.read_text())["processes"]]

    def pytest_alive(self) -> bool:
        """Whether any process of the pytest process's group (its session) still runs."""
        try:
            os.killpg(self.pytest_pid, 0)
        except ProcessLookupError:
            return False
        return True


@pytest.fixture
def slow_suite(suite: Path) -> Iterator[SlowSuite]:
    (suite / "slow.yml").write_text(SLOW_CATALOG)
    (suite / "test-db" / "l0_slow.yml").write_text(SLOW_DB)
    (suite / "cases" / "case_slow.py").write_text(SLOW_CASES)
    slow = SlowSuite(suite)
    yield slow
    if slow.process is not None:
        slow.process.kill()
        slow.process.communicate()
    if slow.pytest_pid and slow.pytest_alive():  # the orphan a failed test leaves behind: ours to end
        os.killpg(slow.pytest_pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def run_pytest() -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_pytest(cwd, *args)`: a real pytest process with ci-tool's plugin loaded."""
    return run_pytest_in
