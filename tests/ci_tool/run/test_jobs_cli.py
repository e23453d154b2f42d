"""`ci-tool run --jobs`: stages side by side, through the real entry point, in a tiny project of its own.

Each stage's one test appends `start` and `end` events to events.log (one write each) with its pytest
process's parent and CUDA_VISIBLE_DEVICES, and waits on what other stages do: their start (so the stages
overlap, or the test fails after a generous limit), another stage's row in the history (so the run has
taken that stage's result), or forever (until the run is interrupted). No test sleeps to synchronise.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.run.resources import HostCapacity, default_jobs, host_capacity
from tests.ci_tool.run.prompt_signals import reset_to_prompt_defaults

PROCESS_TIMEOUT_SECONDS = 300  # a safety net for a busy machine, not a measure
WAIT_SECONDS = 200  # how long a stage's test waits for another stage before it fails

CASE = """\
import json
import os
import sqlite3
import time
from pathlib import Path

ROOT = Path({root!r})
STAGE = {stage!r}


def note(event):
    parent = Path(f"/proc/{{os.getppid()}}/cmdline").read_bytes().replace(b"\\0", b" ").decode()
    line = json.dumps({{"stage": STAGE, "event": event, "pid": os.getpid(), "parent": parent,
                        "gpus": os.environ.get("CUDA_VISIBLE_DEVICES")}})
    with open(ROOT / "events.log", "a") as log:
        log.write(line + "\\n")


def events():
    return [json.loads(line) for line in (ROOT / "events.log").read_text().splitlines()]


def recorded(stage):
    try:
        with sqlite3.connect(f"file:{{ROOT / 'history.sqlite'}}?mode=ro", uri=True) as db:
            return db.execute("SELECT 1 FROM stages WHERE name = ?", (stage,)).fetchone() is not None
    except sqlite3.Error:
        return False


def wait_until(ready, what):
    deadline = time.monotonic() + {wait_seconds}
    while not ready():
        assert time.monotonic() < deadline, f"{{STAGE}} waited in vain for {{what}}"
        time.sleep(0.02)


def test_stage():
    note("start")
    for other in {meets!r}:
        wait_until(lambda: any(e["stage"] == other and e["event"] == "start" for e in events()), other + " to start")
    for other in {after_recorded!r}:
        wait_until(lambda: recorded(other), other + " to be recorded")
    if {hold!r}:
        note("ready")
        time.sleep(600)  # the run is interrupted here
    note("end")
    assert not {fails!r}, "this stage fails on purpose"
"""


@dataclass(frozen=True)
class Stage:
    """A family of one shard (`<family>-1`) whose test does what the fields say."""

    family: str
    meets: tuple[str, ...] = ()  # stages it waits to see started: they overlap it
    after_recorded: tuple[str, ...] = ()  # stages it waits to see in the history
    hold: bool = False  # waits to be interrupted
    fails: bool = False

    @property
    def name(self) -> str:
        return f"{self.family}-1"

    @property
    def key(self) -> str:
        return self.family.lower().replace("-", "_")


@dataclass
class Project:
    root: Path
    stages: Sequence[Stage] = field(default_factory=list)

    def command(self, *extra: str, gpus: int = 0) -> list[str]:
        names = ",".join(stage.name for stage in self.stages)
        facts = self.root / "facts.json"
        facts.write_text(json.dumps({"gpu": "A10" if gpus else None, "system_gpu_count": gpus}))
        return [
            sys.executable, "-m", "ci_tool", "run", f'/bot run --stage-list "{names}"', "--catalog", "jobs.yml",
            "--test-db", "test-db", "--system-info", str(facts), "--history", "history.sqlite", "--progress",
            "lines", *extra,
        ]  # fmt: skip

    def run(self, *extra: str, gpus: int = 0) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*extra, gpus=gpus), cwd=self.root, env=_environment(), capture_output=True, text=True,
            timeout=PROCESS_TIMEOUT_SECONDS, check=False,
        )  # fmt: skip

    def events(self) -> list[dict[str, str]]:
        log = self.root / "events.log"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def recorded(self) -> list[tuple[str, str, str]]:
        """The stages of the one run in the history, in its order: (name, state, reason)."""
        with HistoryStore(self.root / "history.sqlite") as store:
            (run,) = queries.recent_runs(store)
            return [(s.name, s.state, s.reason) for s in queries.run_stages(store, run.run_id)]

    def recorded_last(self) -> list[tuple[str, str, str]]:
        """The stages of the newest run in the history."""
        with HistoryStore(self.root / "history.sqlite") as store:
            run = queries.recent_runs(store)[0]
            return [(s.name, s.state, s.reason) for s in queries.run_stages(store, run.run_id)]


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "CUDA_VISIBLE_DEVICES"}


def make_project(root: Path, stages: Sequence[Stage]) -> Project:
    (root / "cases").mkdir(parents=True)
    (root / "test-db").mkdir()
    (root / "pytest.ini").write_text("[pytest]\n")
    families = "".join(
        f"- {{name: {s.family}, platform: {'a10' if s.family.startswith('A10') else 'cpu'}, "
        f"context: l0_{s.key}, splits: 1}}\n"
        for s in stages
    )
    (root / "jobs.yml").write_text(f"version: 1\nfamilies:\n{families}")
    db = "".join(f"l0_{s.key}:\n- condition: {{}}\n  tests: [cases/case_{s.key}.py]\n" for s in stages)
    (root / "test-db" / "l0.yml").write_text(f"version: 0.0.1\n{db}")
    for s in stages:
        case = CASE.format(
            root=str(root), stage=s.name, meets=s.meets, after_recorded=s.after_recorded, hold=s.hold,
            fails=s.fails, wait_seconds=WAIT_SECONDS,
        )  # fmt: skip
        (root / "cases" / f"case_{s.key}.py").write_text(case)
    return Project(root, stages)


def most_at_once(events: Sequence[dict[str, str]]) -> int:
    """The most stages whose tests ran at the same moment, by their start and end events."""
    running: set[str] = set()
    most = 0
    for event in events:
        if event["event"] == "start":
            running.add(event["stage"])
            most = max(most, len(running))
        elif event["event"] == "end":
            running.discard(event["stage"])
    return most


ALPHA, BETA, GAMMA, DELTA = "CPU-Generic-Alpha", "CPU-Generic-Beta", "CPU-Generic-Gamma", "CPU-Generic-Delta"


def test_stages_run_side_by_side_within_the_bound_and_report_in_catalog_order(tmp_path: Path) -> None:
    # Alpha and Beta each wait for the other to start: with room for two they overlap. Gamma waits for Delta,
    # which only starts once Alpha or Beta has ended: never three at once.
    project = make_project(
        tmp_path / "p",
        [
            Stage(ALPHA, meets=(f"{BETA}-1",)),
            Stage(BETA, meets=(f"{ALPHA}-1",)),
            Stage(GAMMA, meets=(f"{DELTA}-1",)),
            Stage(DELTA, meets=(f"{GAMMA}-1",)),
        ],
    )
    done = project.run("--jobs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert most_at_once(project.events()) == 2
    assert all("stage_process" in event["parent"] for event in project.events())  # each stage its process
    assert [name for name, _, _ in project.recorded()] == [s.name for s in project.stages]
    table = done.stdout.split("| Stage | Result |", 1)[1].split("\n\n", 1)[0]  # the summary table
    assert [row.split("|")[1].strip(" `") for row in table.splitlines()[2:]] == [s.name for s in project.stages]
    assert "up to 2 stages side by side (--jobs 2)" in done.stdout
    lines = done.stdout.splitlines()  # every line of the stream names its stage
    started = [s.name for s in project.stages if f"{s.name}: started (1 list line)" in lines]
    passed = [s.name for s in project.stages if any(line.startswith(f"{s.name}: passed in ") for line in lines)]
    assert started == passed == [s.name for s in project.stages]


def test_jobs_1_runs_one_stage_at_a_time_in_the_catalog_order(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", [Stage(ALPHA), Stage(BETA), Stage(GAMMA)])
    done = project.run("--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    events = project.events()
    assert most_at_once(events) == 1
    assert [e["stage"] for e in events if e["event"] == "start"] == [s.name for s in project.stages]
    assert not any("stage_process" in event["parent"] for event in events)  # ci-tool runs pytest itself
    assert "side by side" not in done.stdout


def test_a_perf_stage_never_shares_the_host(tmp_path: Path) -> None:
    # With room for three, Beta (after the perf stage in the catalog) starts beside Alpha while the perf
    # stage waits for the host to empty; it then runs alone.
    perf = "CPU-Generic-PerfSanity"
    project = make_project(
        tmp_path / "p",
        [Stage(ALPHA, meets=(f"{BETA}-1",)), Stage(perf), Stage(BETA, meets=(f"{ALPHA}-1",))],
    )
    done = project.run("--jobs", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    events = project.events()
    position = [i for i, e in enumerate(events) if e["stage"] == f"{perf}-1"]
    assert [events[i]["event"] for i in position] == ["start", "end"]
    assert most_at_once(events[: position[0]]) == 2
    assert all(e["stage"] == f"{perf}-1" for e in events[position[0] : position[1] + 1])
    assert {e["stage"] for e in events[: position[0]] if e["event"] == "end"} == {f"{ALPHA}-1", f"{BETA}-1"}


def test_after_a_failure_no_stage_starts_and_the_running_ones_keep_their_results(tmp_path: Path) -> None:
    # Alpha fails while Beta runs; Beta waits until the run has recorded Alpha's failure, then passes.
    project = make_project(
        tmp_path / "p",
        [
            Stage(ALPHA, meets=(f"{BETA}-1",), fails=True),
            Stage(BETA, meets=(f"{ALPHA}-1",), after_recorded=(f"{ALPHA}-1",)),
            Stage(GAMMA),
        ],
    )
    done = project.run("--jobs", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    assert [(name, state) for name, state, _ in project.recorded()] == [
        (f"{ALPHA}-1", "failed"),
        (f"{BETA}-1", "passed"),
        (f"{GAMMA}-1", "skipped"),
    ]
    assert project.recorded()[2][2] == f"fail-fast: {ALPHA}-1 failed"
    assert f"{GAMMA}-1" not in {e["stage"] for e in project.events()}
    assert f"{GAMMA}-1: skipped: fail-fast: {ALPHA}-1 failed" in done.stdout


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_an_interrupt_stops_every_running_stage(tmp_path: Path, signum: int) -> None:
    project = make_project(
        tmp_path / "p",
        [
            Stage(ALPHA, meets=(f"{BETA}-1",), hold=True),
            Stage(BETA, meets=(f"{ALPHA}-1",), hold=True),
            Stage(GAMMA),
        ],
    )
    process = subprocess.Popen(
        project.command("--jobs", "2"), cwd=project.root, env=_environment(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=reset_to_prompt_defaults,
    )  # fmt: skip
    try:
        wait_for_ready(project, process, count=2)  # both stages wait to be interrupted
        pids = [int(e["pid"]) for e in project.events() if e["event"] == "ready"]
        os.kill(process.pid, signum)
        out, err = process.communicate(timeout=PROCESS_TIMEOUT_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, out + err
    assert [(name, state) for name, state, _ in project.recorded()] == [
        (f"{ALPHA}-1", "interrupted"),
        (f"{BETA}-1", "interrupted"),
        (f"{GAMMA}-1", "skipped"),
    ]
    assert project.recorded()[2][2] == "not started: the run was interrupted"
    assert [pid for pid in pids if _alive(pid)] == []  # no test process outlives the run


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def wait_for_ready(project: Project, process: subprocess.Popen[str], *, count: int) -> None:
    """Until `count` stages' tests wait to be interrupted; fails at once when the run ends first."""
    deadline = time.monotonic() + PROCESS_TIMEOUT_SECONDS
    while sum(e["event"] == "ready" for e in project.events()) < count:
        if process.poll() is not None:
            pytest.fail(f"the run ended first: {process.communicate()}")
        if time.monotonic() > deadline:
            pytest.fail("the stages did not start")
        time.sleep(0.05)


def test_gpu_stages_get_devices_of_their_own_and_cpu_stages_none(tmp_path: Path) -> None:
    gpu_one, gpu_two = "A10-PyTorch-One", "A10-PyTorch-Two"
    project = make_project(
        tmp_path / "p",
        [
            Stage(gpu_one, meets=(f"{gpu_two}-1", f"{ALPHA}-1")),
            Stage(gpu_two, meets=(f"{gpu_one}-1", f"{ALPHA}-1")),
            Stage(ALPHA, meets=(f"{gpu_one}-1", f"{gpu_two}-1")),
        ],
    )
    done = project.run("--jobs", "3", gpus=2)
    assert done.returncode == 0, done.stdout + done.stderr
    devices = {e["stage"]: e["gpus"] for e in project.events() if e["event"] == "start"}
    assert sorted([devices[f"{gpu_one}-1"], devices[f"{gpu_two}-1"]]) == ["0", "1"]
    assert devices[f"{ALPHA}-1"] == ""


def test_one_stage_at_a_time_a_cpu_stage_sees_no_gpu_either(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", [Stage("A10-PyTorch-One"), Stage(ALPHA)])
    done = project.run("--jobs", "1", gpus=2)
    assert done.returncode == 0, done.stdout + done.stderr
    devices = {e["stage"]: e["gpus"] for e in project.events() if e["event"] == "start"}
    assert devices == {"A10-PyTorch-One-1": None, f"{ALPHA}-1": ""}  # the GPU stage: the host's, as it is


def test_the_default_bound_is_what_the_host_holds(tmp_path: Path) -> None:
    # Two cores and no GPU (this process's affinity set to two cores): two stages side by side.
    project = make_project(tmp_path / "p", [Stage(ALPHA, meets=(f"{BETA}-1",)), Stage(BETA, meets=(f"{ALPHA}-1",))])
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs two cores to pin the run to")
    done = subprocess.run(
        project.command(), cwd=project.root, env=_environment(), capture_output=True, text=True,
        timeout=PROCESS_TIMEOUT_SECONDS, check=False, preexec_fn=lambda: os.sched_setaffinity(0, cores[:2]),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert most_at_once(project.events()) == 2
    assert "up to 2 stages side by side (this machine holds 2: 2 cores, no GPU" in done.stdout


TWO, SOME = ("0", "1"), ("4", "6")


@pytest.mark.parametrize(
    ("facts", "cores", "environ", "expected"),
    [
        ({"gpu": None, "system_gpu_count": 0, "host_mem_available_mib": 22_000}, 2, {}, HostCapacity(2, 22_000, ())),
        ({"gpu": "H100", "system_gpu_count": 2, "host_mem_available_mib": "na"}, 16, {}, HostCapacity(16, None, TWO)),
        ({"gpu": "H100", "system_gpu_count": 8}, 16, {"CUDA_VISIBLE_DEVICES": "4, 6"}, HostCapacity(16, None, SOME)),
    ],
    ids=["two-cores-no-gpu", "two-gpus", "visible-devices"],
)  # fmt: skip
def test_host_capacity(facts: dict[str, object], cores: int, environ: dict[str, str], expected: HostCapacity) -> None:
    assert host_capacity(facts, cores=cores, environ=environ) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("host", "jobs"),
    [
        (HostCapacity(2, 22_000, ()), 2),
        (HostCapacity(16, 128_000, ("0",)), 16),
        (HostCapacity(16, 5_000, ()), 2),
        (HostCapacity(1, None, ()), 1),
        (HostCapacity(4, 1_000, ()), 1),
    ],
    ids=["2-cores", "16-cores-h100", "memory-bound", "unknown-memory", "less-than-a-stage"],
)
def test_default_jobs(host: HostCapacity, jobs: int) -> None:
    assert default_jobs(host) == jobs


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "Invalid value for '--jobs': 0 is not in the range 1<=x<=1024."),
        ("two", "Invalid value for '--jobs': 'two' is not a valid integer range."),
    ],
    ids=["zero", "word"],
)
def test_bad_jobs_is_a_usage_error(tmp_path: Path, value: str, message: str) -> None:
    project = make_project(tmp_path / "p", [Stage(ALPHA)])
    done = project.run("--jobs", value)
    assert (done.returncode, done.stderr.strip().splitlines()[-1]) == (2, f"Error: {message}")
    assert not project.events()


def git(root: Path, *args: str) -> None:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, timeout=60)


def test_a_second_run_reuses_every_stage_that_ran_side_by_side(tmp_path: Path) -> None:
    project = make_project(
        tmp_path / "p", [Stage(ALPHA, meets=(f"{BETA}-1",)), Stage(BETA, meets=(f"{ALPHA}-1",)), Stage(GAMMA)]
    )
    (project.root / ".gitignore").write_text("events.log\nhistory.sqlite*\nfacts.json\n.ci-tool/\n__pycache__/\n")
    git(project.root, "init", "-q")
    git(project.root, "add", ".")
    git(project.root, "commit", "-q", "-m", "the project")
    first = project.run("--jobs", "2")
    assert first.returncode == 0, first.stdout + first.stderr
    started = len(project.events())
    second = project.run("--jobs", "2")
    assert second.returncode == 0, second.stdout + second.stderr
    assert [(name, state) for name, state, _ in project.recorded_last()] == [(s.name, "reused") for s in project.stages]
    assert len(project.events()) == started  # no test ran again
