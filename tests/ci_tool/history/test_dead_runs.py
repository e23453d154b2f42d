"""Runs whose ci-tool died, was interrupted while another process held the lock, or met a full disk: a
real SQLite file, real child processes (SIGKILL, SIGTERM), a real tiny tmpfs; synchronised on the
child's output lines, not on sleeps."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history import owners, queries
from ci_tool.history.locator import History, PostgresUrl
from ci_tool.history.recorder import RunRecorder
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord
from ci_tool.outcomes import RunState

CHILD = """
import sys, time
from pathlib import Path
from ci_tool import interrupts
from ci_tool.history.recorder import RunRecorder
from ci_tool.history.locator import locate
from ci_tool.history.store import RunRecord, StageRecord
from ci_tool.outcomes import RunState
history, run_dir = locate(sys.argv[1]), Path(sys.argv[2])
run_dir.mkdir(exist_ok=True)  # as a run makes its folder before it starts
with interrupts.terminating_signals_interrupt(), RunRecorder(history, run_dir, warn=lambda m: None) as recorder:
    recorder.start_run(RunRecord("child-run", "x", RunState.RUNNING, time.time()))
    print("started", flush=True)
    sys.stdin.readline()  # the parent says when (it holds the lock, or filled the disk, or will kill us)
    print("recording", flush=True)
    try:
        recorder.record_stage(StageRecord("child-run", "S-1", "passed"), recorded_at=time.time())
        recorder.finish_run("child-run", state=RunState.PASSED, finished_at=time.time())
    except KeyboardInterrupt:
        recorder.finish_run("child-run", state=RunState.INTERRUPTED, finished_at=time.time())
        print("interrupted", flush=True)
        sys.exit(130)
    print(recorder.unrecorded, flush=True)
"""


@pytest.fixture
def child_of(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def start_child(started: list[subprocess.Popen[str]], history: History, run_dir: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, history.url if isinstance(history, PostgresUrl) else str(history), str(run_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[3],
    )  # fmt: skip
    started.append(process)
    assert process.stdout is not None and process.stdout.readline() == "started\n"
    return process


def state_of(history: Path, run_id: str) -> tuple[str, float | None]:
    with HistoryStore(history) as store:  # a write open: it sweeps
        run = queries.get_run(store, run_id)
    return run.state, run.finished_at


def test_a_sigkilled_run_is_marked_interrupted_by_the_next_open(
    tmp_path: Path, child_of: list, history_at: History
) -> None:
    history = history_at  # on both backends
    with HistoryStore(history) as store:
        store.start_run(RunRecord("alive", "x", "running", time.time()))  # ours: this process lives
    child = start_child(child_of, history, tmp_path / "run")
    child.kill()
    child.wait()
    with HistoryStore(history, read_only=True) as store:  # a read never sweeps
        assert queries.get_run(store, "child-run").state == "running"
    with HistoryStore(history) as store:
        started_at = queries.get_run(store, "child-run").started_at
        assert [(r.run_id, r.state) for r in queries.recent_runs(store)] == [
            ("child-run", "interrupted"),
            ("alive", "running"),
        ]
        assert queries.get_run(store, "child-run").finished_at == started_at  # no test heard of after its start


def test_ci_tool_history_lists_a_sigkilled_run_as_interrupted(
    tmp_path: Path, child_of: list, capsys: pytest.CaptureFixture[str]
) -> None:
    child = start_child(child_of, tmp_path / "h.sqlite", tmp_path / "run")
    child.kill()
    child.wait()
    assert main(["history", "--history", str(tmp_path / "h.sqlite"), "--json"]) == 0
    assert [run["state"] for run in json.loads(capsys.readouterr().out)["runs"]] == ["interrupted"]


@pytest.mark.parametrize(
    ("host", "owner_pid", "owner_start", "age_hours", "swept"),
    [
        ("elsewhere", 1, "", 4 * 24, True),
        ("elsewhere", 1, "", 1, False),
        ("here", None, "", 4 * 24, True),  # recorded before owners were: by age
        ("here", None, "", 1, False),
        ("here", "me", "another-boot|ns|1", 1, True),  # this pid, but from before the last boot
        ("here", "me", "this-place|0", 1, True),  # this pid now belongs to another process (another start)
        ("here", "me", "this-place|me", 1, False),  # this very process
        # two machines of one host name: the machine id tells them apart
        ("here", 1, "another-machine|another-boot|ns|1", 1, False),  # not ours to judge: by age
        ("here", 1, "another-machine|another-boot|ns|1", 4 * 24, True),
        ("here", "me", "this-machine|another-boot|ns|1", "before-boot", True),  # this machine before its last boot
        ("here", 1, "this-machine|another-boot|ns|1", 0.001, False),  # started since: a clone with our name and id
    ],
    ids=["other-host-old", "other-host-recent", "no-owner-old", "no-owner-recent", "before-reboot", "pid-reused",
         "alive", "same-name-other-machine-recent", "same-name-other-machine-old", "this-machine-before-reboot",
         "clone-since-boot"],
)  # fmt: skip
def test_the_sweep_decides_by_owner_and_age(
    tmp_path: Path, host: str, owner_pid: int | str | None, owner_start: str, age_hours: float | str, swept: bool
) -> None:
    me = owners.this_process()
    place, _, ticks = me.start.rpartition("|")
    machine = place.split("|")[0]
    owner_start = owner_start.replace("this-place", place).replace("|me", f"|{ticks}")
    owner_start = owner_start.replace("this-machine", machine)
    booted = float(next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
                        ).split()[1])  # fmt: skip
    started_at = booted - 60 if age_hours == "before-boot" else time.time() - float(age_hours) * 3600
    history = tmp_path / "h.sqlite"
    HistoryStore(history).close()
    db = sqlite3.connect(history, isolation_level=None)
    db.execute(
        "INSERT INTO runs (run_id, command, state, started_at, host, owner_pid, owner_start) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        ("r", "x", "running", started_at, socket.gethostname() if host == "here" else host,
         os.getpid() if owner_pid == "me" else owner_pid, owner_start),
    )  # fmt: skip
    db.close()
    assert state_of(history, "r")[0] == ("interrupted" if swept else "running")


def test_sigterm_while_another_process_holds_the_lock_is_acted_on_at_once(tmp_path: Path, child_of: list) -> None:
    history = tmp_path / "h.sqlite"
    child = start_child(child_of, history, tmp_path / "run")
    locker = sqlite3.connect(history, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # the child's busy timeout is 60 s a try, 3 tries
    try:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "recording\n"
        time.sleep(0.5)  # not a synchronisation: lets the child enter its lock wait (it passes either way)
        sent = time.monotonic()
        child.send_signal(signal.SIGTERM)
        assert child.stdout.readline() == "interrupted\n"
        assert child.wait(timeout=30) == 130
        took = time.monotonic() - sent
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert took < 10, f"{took:.1f} s from SIGTERM to exit"  # 2 s to try closing the run, then the sweep's turn
    assert state_of(history, "child-run") == ("interrupted", pytest.approx(state_of(history, "child-run")[1]))
    assert (tmp_path / "run" / "unrecorded.json").is_file()


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "tiny"
    disk.mkdir()
    if os.geteuid() != 0 or sys.platform != "linux":
        pytest.skip("mounting a tmpfs needs root on Linux")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> Path:
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:  # ENOSPC: the disk is full
            pass
    return filler


def test_a_full_disk_under_the_history_keeps_the_run_in_its_folder_and_leaves_nothing_running(
    tmp_path: Path, tiny_disk: Path, child_of: list, capsys: pytest.CaptureFixture[str]
) -> None:
    history, run_dir = tiny_disk / "h.sqlite", tmp_path / "run"
    child = start_child(child_of, history, run_dir)
    filler = fill(tiny_disk)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.stdout.readline() == "recording\n"
    said = child.stdout.readline().strip()
    assert child.wait(timeout=60) == 0
    assert said == (
        f"{run_dir}: the run is not in the history ({history}: cannot write the history: expected room on its disk, "
        f"found the disk full); its records wait in {run_dir}/unrecorded.json (its results are in this folder as "
        f"always: result.json and junit.xml per stage) Hint: `ci-tool history import {run_dir}` records them once "
        "the history can take them (free space there, or pass --history PATH on another disk)"
    )
    filler.unlink()
    assert state_of(history, "child-run")[0] == "interrupted"  # its owner has gone: swept
    assert main(["history", "import", str(run_dir), "--history", str(history)]) == 0
    assert capsys.readouterr().out == f"recorded run child-run (passed, 1 stages, 0 tests) in {history}\n"


def test_an_interrupted_run_records_what_is_left_in_one_short_try_each(tmp_path: Path) -> None:
    """After an interrupt (an interrupted stage) the lock is not waited for: 3 x 60 s would outlast a CI
    cancel's grace; what the history cannot take stays in unrecorded.json."""
    history, run_dir = tmp_path / "h.sqlite", tmp_path / "run"
    run_dir.mkdir()
    with RunRecorder(history, run_dir) as recorder:
        recorder.start_run(RunRecord("r", "x", "running", time.time()))
        locker = sqlite3.connect(history, isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")
        try:
            started = time.monotonic()
            recorder.record_stage(StageRecord("r", "S-1", "interrupted"), recorded_at=time.time())
            recorder.record_stage(
                StageRecord("r", "S-2", "skipped", "the run was interrupted"), recorded_at=time.time()
            )
            recorder.finish_run("r", state=RunState.INTERRUPTED, finished_at=time.time())
            took = time.monotonic() - started
        finally:
            locker.close()
    assert took < 10, f"{took:.1f} s"  # one 2 s try, then the folder
    assert str(recorder.unrecorded).startswith(f"{run_dir}: the run is not in the history ({history}: the history "
                                               "is locked: expected to write it within 1 try of 2 s")  # fmt: skip
    assert '"state": "interrupted"' in (run_dir / "unrecorded.json").read_text()
