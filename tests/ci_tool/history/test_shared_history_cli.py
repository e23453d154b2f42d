"""Two clones of a project, one PostgreSQL history, through the real CLI: runs made at once in both are
both recorded, the second clone reuses a stage the first passed on the same code, and the password (in the
URL the runs are given) appears in no output and no file they write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ci_tool.history.locator import PostgresUrl
from tests.ci_tool.history.postgres_server import PASSWORD

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


def start(root: Path, url: PostgresUrl, *argv: str) -> subprocess.Popen[str]:
    environ = {**os.environ, "CI_TOOL_HISTORY": url.url}
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
    assert f"- CPU-Generic-1: reused from run {newest}" in out

    said = "\n".join(out for _, out in outputs) + listed + out
    written = [path for clone in (first, second) for path in (clone / ".ci-tool").rglob("*") if path.is_file()]
    assert written and PASSWORD not in said
    assert [path for path in written if PASSWORD.encode() in path.read_bytes()] == []
