"""Two clones of a project, one PostgreSQL history, through the real CLI: runs made at once in both are
both recorded, the second clone reuses a stage the first passed on the same code, and the password (in the
URL the runs are given) appears in no output and no file they write. A server that is stopped, or frozen
before or during a run, costs the run its record and nothing else: `history import` records it later."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ci_tool.history.locator import PostgresUrl
from tests.ci_tool.history.postgres_server import PASSWORD, PostgresServer

CATALOG = """\
version: 1
families:
- {name: CPU-Generic, platform: cpu, context: l0_green, splits: 1}
"""
RUN = ["run", "/bot run", "--catalog", "shared.yml", "--system-info", "cpu-only.json"]


def git(root: Path, *args: str) -> None:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True)


def clones(suite: Path, tmp_path: Path) -> tuple[Path, Path]:
    (suite / "shared.yml").write_text(CATALOG)
    (suite / ".gitignore").write_text(".ci-tool/\n__pycache__/\n")
    git(suite, "init", "-q")
    git(suite, "add", ".")
    git(suite, "commit", "-q", "-m", "the suite")
    first, second = tmp_path / "first", tmp_path / "second"
    for clone in (first, second):
        git(tmp_path, "clone", "-q", str(suite), str(clone))
    return first, second


def start(root: Path, url: PostgresUrl, *argv: str, environ: dict[str, str] | None = None) -> subprocess.Popen[str]:
    environ = {**os.environ, **(environ or {}), "CI_TOOL_HISTORY": url.url}
    return subprocess.Popen(
        [sys.executable, "-m", "ci_tool", *argv], cwd=root, env=environ, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip


def finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = process.communicate(timeout=600)
    return process.returncode, out


def test_two_clones_share_one_history_and_the_second_reuses_what_the_first_passed(
    suite: Path, tmp_path: Path, postgres_url: PostgresUrl
) -> None:
    first, second = clones(suite, tmp_path)
    at_once = [start(first, postgres_url, *RUN), start(second, postgres_url, *RUN)]
    outputs = [finish(process) for process in at_once]
    assert [code for code, _ in outputs] == [0, 0], outputs
    code, listed = finish(start(first, postgres_url, "history", "--json"))
    runs = json.loads(listed)["runs"]
    assert (code, sorted(run["state"] for run in runs), len({run["run_id"] for run in runs})) == (0, ["passed"] * 2, 2)

    code, out = finish(start(second, postgres_url, *RUN))
    newest = max(runs, key=lambda run: run["started_at"])["run_id"]
    assert code == 0, out
    assert f"reuse: run {newest} (commit " in out
    assert f"\nCPU-Generic-1: reused from run {newest}\n" in out

    said = "\n".join(out for _, out in outputs) + listed + out
    written = [path for clone in (first, second) for path in (clone / ".ci-tool").rglob("*") if path.is_file()]
    assert written and PASSWORD not in said
    assert [path for path in written if PASSWORD.encode() in path.read_bytes()] == []


def test_eight_stage_runs_at_once_give_eight_records(suite: Path, tmp_path: Path, postgres_url: PostgresUrl) -> None:
    first, _ = clones(suite, tmp_path)
    stage_run = ["stage", "run", "CPU-Generic-1", "--catalog", "shared.yml", "--system-info", "cpu-only.json"]
    outputs = [finish(process) for process in [start(first, postgres_url, *stage_run) for _ in range(8)]]
    assert [code for code, _ in outputs] == [0] * 8, outputs
    code, listed = finish(start(first, postgres_url, "history", "--json", "--limit", "20"))
    runs = json.loads(listed)["runs"]
    assert (code, len({run["run_id"] for run in runs}), {run["state"] for run in runs}) == (0, 8, {"passed"})


def test_a_run_made_while_the_server_is_stopped_is_recorded_by_history_import_after_the_restart(
    suite: Path, tmp_path: Path, own_postgres_server: PostgresServer
) -> None:
    first, _ = clones(suite, tmp_path)
    server = own_postgres_server  # its own: this test stops it
    url = PostgresUrl(server.create_database("history"))
    server.stop()
    code, out = finish(start(first, url, *RUN, "--html-report", "report.html"))
    run_dirs = list((first / ".ci-tool" / "runs").iterdir())
    # the stages ran and passed, and so does the run: the outage is one warning line, the HTML report comes
    assert (code, len(run_dirs), PASSWORD in out) == (0, 1, False), out
    assert "CPU-Generic-1: passed in " in out, out
    told = [line for line in out.splitlines() if line.startswith("warning: ")]
    kept = f".ci-tool/runs/{run_dirs[0].name}/unrecorded.json"
    assert len(told) == 1 and f"records wait in {kept} " in told[0], out
    assert f"{url.shown()}: cannot open the history: expected a PostgreSQL server" in told[0]
    assert "CPU-Generic-1" in (first / "report.html").read_text()
    # the pipelines' step after the stage, while the server is still down: it says where the records wait
    step = ["history", "import", "--if-kept", f".ci-tool/runs/{run_dirs[0].name}"]
    code, out = finish(start(first, url, *step))
    assert (code, PASSWORD in out) == (1, False), out
    assert f"; run {run_dirs[0].name}'s records still wait in {kept} Hint: " in out, out
    server.start()
    code, out = finish(start(first, url, *step))
    assert (code, PASSWORD in out) == (0, False), out
    code, listed = finish(start(first, url, "history", "--json"))
    assert [(run["run_id"], run["state"]) for run in json.loads(listed)["runs"]] == [(run_dirs[0].name, "passed")]


FREEZE_CASE = """\
import os
import signal
from pathlib import Path


def test_freeze_the_history_server():  # as a host that stops answering mid-run: SIGSTOP to all its processes
    if not os.environ["FREEZE_POSTMASTER"]:
        return  # frozen before the run
    postmaster = int(os.environ["FREEZE_POSTMASTER"])
    children = [int(stat.parent.name) for stat in Path("/proc").glob("[0-9]*/stat")
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == postmaster]
    for pid in (postmaster, *children):
        os.kill(pid, signal.SIGSTOP)
"""
FREEZE_LIST = """\
l0_freeze:
- condition:
    terms:
      stage: pre_merge
  tests:
  - cases/case_basic.py::test_pass
  - cases/case_freeze.py
"""
FREEZE_CATALOG = """\
version: 1
families:
- {name: CPU-Generic, platform: cpu, context: l0_freeze, splits: 1}
"""
SHORT_DEADLINES = "?connect_timeout=2&options=-c%20statement_timeout%3D1000"  # an answer waits 1 + 2 s
FROZEN = {
    "during-a-connect": "cannot open the history: expected a PostgreSQL server to answer within 2 s (connect_timeout)",
    "during-the-run": "cannot write the history: expected the PostgreSQL server to answer within 3 s, found no answer",
}


@pytest.mark.parametrize("when", list(FROZEN))
def test_a_run_whose_server_freezes_ends_keeps_its_records_and_history_import_records_them_after_the_thaw(
    suite: Path, tmp_path: Path, when: str, own_postgres_server: PostgresServer
) -> None:
    (suite / "cases" / "case_freeze.py").write_text(FREEZE_CASE)
    (suite / "test-db" / "l0_fixture.yml").write_text((suite / "test-db" / "l0_fixture.yml").read_text() + FREEZE_LIST)
    (suite / "freeze.yml").write_text(FREEZE_CATALOG)
    first, _ = clones(suite, tmp_path)
    server = own_postgres_server  # its own: this test freezes it
    url = PostgresUrl(server.create_database("history") + SHORT_DEADLINES)
    environ = {"FREEZE_POSTMASTER": str(server.postmaster()) if when == "during-the-run" else ""}
    if when == "during-a-connect":
        server.freeze()
    begun = time.monotonic()
    code, out = finish(start(first, url, "run", "/bot run", "--catalog", "freeze.yml", "--system-info",
                             "cpu-only.json", environ=environ))  # fmt: skip
    took = time.monotonic() - begun
    server.thaw()
    run_dirs = list((first / ".ci-tool" / "runs").iterdir())
    # the stage ran and passed; the run ends at the deadline, says in one line it is not recorded, passes
    assert (code, len(run_dirs), PASSWORD in out, took < 300) == (0, 1, False, True), out
    assert "CPU-Generic-1: passed in " in out, out
    told = [line for line in out.splitlines() if "history import" in line]
    assert len(told) == 1 and f"`ci-tool history import .ci-tool/runs/{run_dirs[0].name}`" in told[0], out
    assert (
        f"warning: .ci-tool/runs/{run_dirs[0].name}: the run is not in the history ({url.shown()}: "
        f"{FROZEN[when]}" in told[0]
    )
    if when == "during-the-run":  # the history took the run as `running`: the next command here marks it
        code, listed = finish(start(first, url, "history", "--json"))
        assert [(run["run_id"], run["state"]) for run in json.loads(listed)["runs"]] == [
            (run_dirs[0].name, "interrupted")
        ], listed
    code, out = finish(start(first, url, "history", "import", f".ci-tool/runs/{run_dirs[0].name}"))
    assert (code, PASSWORD in out) == (0, False), out
    code, listed = finish(start(first, url, "history", "--json"))
    assert [(run["run_id"], run["state"]) for run in json.loads(listed)["runs"]] == [(run_dirs[0].name, "passed")]
