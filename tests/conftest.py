"""Suite-wide options and fixtures: `golden` compares output with a golden file (`--update-goldens`
rewrites it); `gpu` tests skip cleanly without CUDA; hypothesis runs without its per-example deadline; the
session's skips go to a file when .ci/run asks (tests/skip_report.py)."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import sys
import tempfile


def _keep_bytecode() -> None:
    """Let this session and every process it starts keep compiled modules, in a folder outside the tree.

    With PYTHONDONTWRITEBYTECODE set (as on this project's CI hosts), every Python process compiles each
    module it imports again, and pytest rewrites again every module of each plugin's distribution (all of
    hypothesis's among them). The suite starts thousands of Python processes (stages, CLI runs, pytest
    children): one `ci-tool run` test took 13.0 s of CPU with the variable and 8.6 s without (docs/PERF.md).
    The compiled files go into a folder of this session's, removed as it ends, not into `__pycache__` folders
    of the checkout, which the variable was most likely set to keep clean (and the tests' own temporary
    checkouts would leave files of paths that are gone). Runs at import, before xdist's workers start: they
    and every process below inherit the environment."""
    if not os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        return
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    if not prefix:
        prefix = os.environ["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="ci-tool-tests-pycache-")
        atexit.register(shutil.rmtree, prefix, ignore_errors=True)
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix


MEMORY_FOLDER = "/dev/shm"
# What the session's temporary files take at their peak (4.35 GB, while the act files' job workspaces were all
# there) and then some: a smaller /dev/shm (a container's 64 MB) keeps the system's folder.
MEMORY_FOLDER_ROOM = 6 << 30


def _temporary_files_in_memory() -> None:
    """Put this session's temporary files (tmp_path, the PostgreSQL clusters, what the processes it starts
    write) in memory, where the machine has the room and the user named no folder of their own ($TMPDIR).

    This VM's disk made a file system's metadata costly: a PostgreSQL CREATE DATABASE took 330 ms there and
    20 ms in /dev/shm, and tests/ci_tool/history ran in 123 s on disk against 67 s in memory (docs/PERF.md).
    Runs at import, before xdist's workers start: they and every process below inherit the variable."""
    if os.environ.get("TMPDIR"):
        return
    try:
        room = shutil.disk_usage(MEMORY_FOLDER).free
    except OSError:  # no such folder
        return
    if room >= MEMORY_FOLDER_ROOM and os.access(MEMORY_FOLDER, os.W_OK):
        os.environ["TMPDIR"] = MEMORY_FOLDER
        tempfile.tempdir = None  # gettempdir() reads the variable again


def _hear_ctrl_c() -> None:
    """Give this process Python's Ctrl-C handler back when whoever started pytest ignored SIGINT.

    A shell without job control starts a background job with SIGINT ignored (`./.ci/run &` in a script), and
    Python then leaves it ignored. ci-tool does the same, on purpose: an ignored signal stays ignored. But the
    interrupt tests send SIGINT to this process and expect Ctrl-C's behaviour; under an inherited ignore, three
    of them failed. Runs at import, in the session and in each xdist worker (each imports this file)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_temporary_files_in_memory()  # first: the compiled modules' folder goes there too
_hear_ctrl_c()
_keep_bytecode()

# After _keep_bytecode: pytest rewrites hypothesis's modules as this imports them, and may now keep the result.
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

from tests.helpers.golden import Golden, check_golden  # noqa: E402

# The session's skips for .ci/run, when it asks (tests/skip_report.py); hooks, so imported by name.
from tests.skip_report import pytest_configure  # noqa: E402, F401

# A deadline (200 ms an example) and the too-slow health check measure the machine, not the code: on a busy
# one they fail at random. No property test here is about speed. (Built on the current default, so that
# hypothesis's own "ci" profile, when $CI is set, still applies.)
settings.register_profile("ci-tool", settings(deadline=None, suppress_health_check=[HealthCheck.too_slow]))
settings.load_profile("ci-tool")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output instead of comparing against them",
    )


@functools.cache
def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


XDIST_WORKERS_BEYOND_CORES = 2


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers more than the cores this process may use. The suite's processes wait on their
    children a good part of the time (act's jobs, the servers, the stages' pytest runs): with a worker per
    core 1.5 of 2 cores were busy. On the 2-core VM, 2, 3 and 4 workers ran the suite in 804 s, 667 s and (its
    temporary files in memory as well) 568 s with 3 and 540 s with 4 (docs/PERF.md)."""
    return len(os.sched_getaffinity(0)) + XDIST_WORKERS_BEYOND_CORES


@pytest.hookimpl(tryfirst=True)  # ci-tool's test-list plugin, when a stage runs the suite, orders after this
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # `slow` files first: under `-n auto --dist loadfile` a file goes to a worker as one unit, in this order, so
    # the longest units (the act runs, minutes each) start at once instead of ending the session alone.
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items or _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """`golden(path, actual)`: fail with a unified diff when `actual` differs from the file at `path` (a
    missing file counts as empty); with `--update-goldens`, write `actual` there instead."""
    update = bool(request.config.getoption("--update-goldens"))
    return functools.partial(check_golden, update=update)
