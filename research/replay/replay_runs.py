"""Trees and pytest runs of the replay bench (mutation_replay_bench.py).

    tree      a commit's files out of git (`git archive`) in a temporary folder: never a worktree of the
              replayed repository, so a planted fault never reaches it
    batch     one pytest process of one stage: the test paths of its lines that share a `-k`/`-m` filter
    run       a stage's batches on a tree, one after the other: each test's outcome and seconds from pytest's
              JUnit file (each test's node id in a property: replay_plugin.py), in the order they ran;
              with `record`, the touch records the processes wrote (ci_tool/run/touch_recorder.py)

The tree's own code is first on the path (src/ and its root): what runs is that commit's engine and ci_tool,
the fault included; only the plugins come from this checkout (replay_plugin.py). No bytecode is written in
the tree (a mutant of the same size and second as the original must not load the original's .pyc), and
torch takes one thread per process (the bench shares a 2-core machine; it speeds every run the same way).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tool.outcomes import TestOutcome
from ci_tool.run.junit import CaseResult, parse_junit
from ci_tool.testdb.check import covers

TOOL_ROOT = Path(__file__).resolve().parents[2]  # research/replay/ -> the checkout
REPLAY = Path(__file__).resolve().parent  # replay_plugin.py's folder, on the runs' path
TEST_TIMEOUT_SECONDS = 300  # a test a fault sends into a loop fails here (pytest-timeout), the run goes on
_NOT_FOUND = re.compile(r"ERROR: (?:file or directory )?not found: (\S+)")
_DROPPED = ("PYTHONPATH", "COVERAGE_PROCESS_START", "PYTEST_ADDOPTS", "TOUCH_RECORD_TEST")


@dataclass(frozen=True)
class Batch:
    """One pytest process of stage `stage`: `paths` (files or node ids) with the filter they share."""

    stage: str
    paths: tuple[str, ...]
    filters: str = ""  # ` -m "not gpu"`, as the list line writes it


@dataclass(frozen=True)
class TestResult:
    __test__ = False  # not a pytest test class despite the name

    test_id: str  # a node id, or a file's path for a file that did not import (a collection error)
    outcome: TestOutcome
    seconds: float
    stage: str
    filters: str  # its batch's
    batch: int  # its batch's place in the run


@dataclass(frozen=True)
class Run:
    results: tuple[TestResult, ...]  # in the order they ran
    seconds: float  # the wall time of the whole run
    broken: str = ""  # why a process left no results (a crash, or it outlived its limit); "" when none did

    def failed(self) -> frozenset[str]:
        return frozenset(result.test_id for result in self.results if result.outcome.is_failure)


def export_tree(repository: Path, commit: str, folder: Path) -> Path:
    """The files of `commit` in `folder` (created)."""
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=repository, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def run_batches(
    tree: Path,
    batches: Sequence[Batch],
    scratch: Path,
    *,
    record: bool = False,
    priority: Sequence[str] = (),
    limit_seconds: float = 3600,
) -> Run:
    """Run `batches` on `tree` (see the module docstring); files go under `scratch`. `priority`: the tests
    each process runs first (ci_tool/run/order.py)."""
    scratch.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results: list[TestResult] = []
    broken = ""
    for index, batch in enumerate(batches):
        found, why = _run_batch(tree, batch, scratch / f"b{index}", index, record, priority, limit_seconds)
        results += found
        broken = broken or why
    return Run(tuple(results), time.monotonic() - started, broken)


def _run_batch(
    tree: Path, batch: Batch, prefix: Path, index: int, record: bool, priority: Sequence[str], limit: float
) -> tuple[list[TestResult], str]:
    junit = prefix.with_suffix(".xml")
    options = ["-p", "replay_plugin", f"--junitxml={junit}", f"--timeout={TEST_TIMEOUT_SECONDS}"]
    options += ["--timeout-method=signal", "--continue-on-collection-errors", *shlex.split(batch.filters)]
    if record:
        options.append(f"--touch-record={prefix.with_suffix('.touches.json')}")
    if priority:
        prefix.with_suffix(".priority").write_text("".join(f"{test}\n" for test in priority), encoding="utf-8")
        options.append(f"--priority-file={prefix.with_suffix('.priority')}")
    paths, code = list(batch.paths), 0
    while paths:
        junit.unlink(missing_ok=True)
        done = _pytest(tree, [*options, *paths], limit)
        if done is None:
            return [], f"a pytest process of {batch.stage} outlived {limit:.0f} s"
        missing, code = set(_NOT_FOUND.findall(done.stdout + done.stderr)), done.returncode
        if code != 4 or not missing:
            break
        paths = [path for path in paths if path not in missing and str(tree / path) not in missing]
    if not paths:  # nothing the batch names is in this tree
        return [], ""
    if not junit.is_file():
        return [], f"a pytest process of {batch.stage} ended {code} with no JUnit file"
    return [_result(case, batch, index) for case in parse_junit(junit).cases], ""


def _pytest(tree: Path, arguments: Sequence[str], limit: float) -> subprocess.CompletedProcess[str] | None:
    environment = {name: value for name, value in os.environ.items() if name not in _DROPPED}
    environment |= {
        "PYTHONPATH": os.pathsep.join([str(tree / "src"), str(tree), str(REPLAY)]),
        "REPLAY_TOOL_ROOT": str(TOOL_ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": "1",
    }
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments]
    process = subprocess.Popen(command, cwd=tree, env=environment, text=True, start_new_session=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the tests' own processes too
        process.communicate()
        return None
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def _result(case: CaseResult, batch: Batch, index: int) -> TestResult:
    nodeid = case.nodeid
    if "::" not in nodeid:  # a file that failed to import: pytest names it by its dotted module
        nodeid = nodeid.replace(".", "/") + ".py"
    return TestResult(nodeid, case.outcome, case.duration_seconds, batch.stage, batch.filters, index)


def hits(selector: str, test_id: str) -> bool:
    """Whether running `selector` runs `test_id`, or meets its failure (a file that does not import fails
    every selector under it)."""
    return covers(selector, test_id) or (test_id.endswith(".py") and covers(test_id, selector))
