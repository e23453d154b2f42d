"""The bot driving GitHub Actions, end to end under act on this machine: an `issue_comment` event for a
`/bot run` on pull request #7 of a real git repository runs bot.yml for real; it answers through the
loopback GitHub (tests/helpers/fake_github.py), whose Actions backend runs each dispatched
l0-test.yml under act too, in a checkout of the dispatched head commit (act does not run actions/checkout;
the workflow's `ref: head_sha` is what the checkout stands for). bot.yml's follow job follows the run to its
end and posts the final CI report and status from the run's real artifacts. Then `/bot kill`, handled by
bot.yml while another run is running, cancels it: its act process is stopped.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.ci_tool.actions.act_runner import (
    ROOT,
    ActRunner,
    WorkflowRun,
    drop_job_workspaces,
    with_light_build,
    with_local_checkouts,
    working_tree_repo,
)
from tests.helpers.fake_actions import FakeRun
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.git_pulls import git, serve_pull

pytestmark = pytest.mark.slow

REPOSITORY = "example/ci-tool"
PR = 7
BOT = Path(".github/workflows/bot.yml")
L0_TEST = Path(".github/workflows/l0-test.yml")
CUSTOM = "Custom L0 Test run"  # a --stage-list run's context
COMMENTED = "2030-01-01T00:00:00Z"  # after the commits of the repository (the bot refuses a newer head)


@dataclass(frozen=True)
class BotActRunner(ActRunner):
    """act for bot.yml: the GitHub API is the loopback fake (act sets GITHUB_API_URL itself; `--env` wins) and
    the repository variable CI_TOOL_BOT_ENGINES says github."""

    api_url: str = ""

    def command(self, *args: object, **kwargs: object) -> list[str]:  # type: ignore[override]
        found = super().command(*args, **kwargs)  # type: ignore[arg-type]
        return [*found, "--env", f"GITHUB_API_URL={self.api_url}", "--env", "NO_PROXY=127.0.0.1",
                "--var", "CI_TOOL_BOT_ENGINES=github"]  # fmt: skip


@dataclass
class ActBackend:
    """Runs each dispatched l0-test.yml under act in a clone of `origin` at the run's head_sha; a look at the
    run sees act's process (running, or its exit code and the artifacts its jobs uploaded); a cancel stops it."""

    runner: ActRunner
    origin: Path
    scratch: Path
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)
    folders: dict[int, Path] = field(default_factory=dict)
    started: threading.Event = field(default_factory=threading.Event)

    def dispatched(self, run: FakeRun) -> None:
        folder = self.scratch / f"run-{run.id}"
        clone = folder / "repo"
        folder.mkdir(parents=True)
        git(folder, "clone", "-q", str(self.origin), str(clone))
        git(clone, "checkout", "-q", "--detach", run.inputs["head_sha"])
        home = folder / "home"
        home.mkdir()
        secrets = folder / "secrets"
        secrets.write_text("")
        command = self.runner.command(self.workflow(clone, folder), folder, event="workflow_dispatch",
                                      inputs=run.inputs, secrets_file=secrets)  # fmt: skip
        with (folder / "act.jsonl").open("wb") as log:
            self.processes[run.id] = subprocess.Popen(
                command, cwd=clone, env=self.runner.job_environment(home), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        self.folders[run.id] = folder
        run.status = "in_progress"
        self.started.set()

    @staticmethod
    def workflow(clone: Path, folder: Path) -> Path:
        """The generated l0-test.yml as act runs it in the clone at head_sha (act_runner.with_local_checkouts)."""
        return with_local_checkouts(clone / L0_TEST, folder)

    def looked_at(self, run: FakeRun) -> None:
        process = self.processes.get(run.id)
        if run.status == "completed" or process is None or process.poll() is None:
            return
        self.ended(run, "success" if process.returncode == 0 else "failure")

    def cancelled(self, run: FakeRun) -> None:
        process = self.processes[run.id]
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=120)
        self.ended(run, "cancelled")

    def ended(self, run: FakeRun, conclusion: str) -> None:
        """The run completed with `conclusion`: its job workspaces go, the artifacts its jobs uploaded stay."""
        run.status, run.conclusion = "completed", conclusion
        drop_job_workspaces(self.folders[run.id])
        run.artifacts = self.uploaded(run)

    def uploaded(self, run: FakeRun) -> dict[str, bytes]:
        """What the run's jobs uploaded to act's artifact server: `artifacts/1/NAME/NAME.zip`."""
        root = self.folders[run.id] / "artifacts" / "1"
        zips = [folder / f"{folder.name}.zip" for folder in sorted(root.glob("*"))]
        return {path.parent.name: path.read_bytes() for path in zips if path.is_file()}


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's working tree on `main`, with pull request #7 (a docs change) at refs/pull/7/head."""
    working_tree = with_light_build(working_tree_repo(ROOT, tmp_path_factory.mktemp("origin")))
    git(working_tree, "checkout", "-q", "-b", "pr")
    (working_tree / "docs" / "act-note.md").write_text("# A note\n\nProposed by pull request #7.\n")
    git(working_tree, "add", "-A")
    git(working_tree, "commit", "-q", "-m", "docs: a note")
    git(working_tree, "update-ref", f"refs/pull/{PR}/head", "HEAD")
    git(working_tree, "checkout", "-q", "main")
    git(working_tree, "remote", "add", "origin", str(working_tree))  # what the jobs fetch the base and head from
    return working_tree


def comment_event(body: str, comment_id: int) -> dict[str, object]:
    return {
        "action": "created",
        "issue": {"number": PR, "state": "open", "labels": [], "pull_request": {"url": "x"}},
        "comment": {"id": comment_id, "body": body, "user": {"login": "maintainer-amy", "type": "User"},
                    "author_association": "MEMBER", "created_at": COMMENTED, "updated_at": COMMENTED},
        "repository": {"full_name": REPOSITORY, "default_branch": "main"},
        "sender": {"login": "maintainer-amy", "type": "User"},
    }  # fmt: skip


@pytest.fixture
def github(origin: Path) -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    serve_pull(fake, REPOSITORY, PR, origin, base="main", head=f"refs/pull/{PR}/head")
    yield fake
    fake.close()


def bot_runner(act_runner: ActRunner, github: FakeGitHub, scratch: Path) -> BotActRunner:
    return BotActRunner(act=act_runner.act, scratch=scratch, actions=act_runner.actions, api_url=github.api_url,
                        kept_builds=act_runner.kept_builds_folder)  # fmt: skip


def handle(
    runner: BotActRunner, origin: Path, github: FakeGitHub, body: str, comment_id: int, name: str
) -> WorkflowRun:
    """bot.yml for one comment, in a checkout of the default branch (as GitHub runs issue_comment workflows)."""
    checkout = runner.scratch / f"{name}-checkout"
    git(runner.scratch, "clone", "-q", str(origin), str(checkout))
    return runner.run(checkout / BOT, checkout, event="issue_comment", payload=comment_event(body, comment_id),
                      secrets={"GITHUB_TOKEN": github.token}, name=name)  # fmt: skip


def statuses(github: FakeGitHub) -> list[tuple[str, str, str]]:
    return [(str(s["context"]), str(s["state"]), str(s["description"])) for s in github.statuses]


def test_a_bot_run_dispatches_l0_test_and_its_follower_reports_the_run(
    act_runner: ActRunner, origin: Path, github: FakeGitHub, tmp_path: Path
) -> None:
    runner = bot_runner(act_runner, github, tmp_path)
    github.actions.backend = ActBackend(act_runner, origin, tmp_path / "runs")
    bot = handle(runner, origin, github, '/bot run --stage-list "CPU-Build_Docs"', 111, "run")
    assert bot.exit_code == 0, bot.summary()
    (run,) = github.actions.dispatched()
    head = git(origin, "rev-parse", f"refs/pull/{PR}/head").strip()
    assert (run.inputs["head_sha"], run.ref, run.conclusion) == (head, "main", "success"), bot.summary()
    record = json.loads(_member(run.artifacts["ci-tool-selection"], "selection.json"))
    assert (record["stages"], record["head"]) == (["CPU-Build_Docs"], head)  # the run tested the head commit
    reply, report = github.bodies()
    assert f"dispatched: [L0 Test run {run.id}]" in reply
    assert report.startswith(f"## CI report: [L0 Test #{run.id}]") and "**SUCCESS**" in report
    assert "`CPU-Build_Docs`" in report
    cases = _member(run.artifacts["results-CPU-Build_Docs"], "junit.xml").count("<testcase ")  # the stage's JUnit
    assert cases > 0
    assert statuses(github) == [(CUSTOM, "pending", f"run {run.id} started"),
                                (CUSTOM, "success", f"{cases} passed, 0 failed, 0 skipped")]  # fmt: skip


def test_kill_cancels_a_running_run(act_runner: ActRunner, origin: Path, github: FakeGitHub, tmp_path: Path) -> None:
    runner = bot_runner(act_runner, github, tmp_path)
    backend = ActBackend(act_runner, origin, tmp_path / "runs")
    github.actions.backend = backend
    finished: list[WorkflowRun] = []
    running = threading.Thread(target=lambda: finished.append(
        handle(runner, origin, github, '/bot run --stage-list "CPU-Generic-1"', 221, "run")))  # fmt: skip
    running.start()
    assert backend.started.wait(timeout=900), "bot.yml dispatched no run"
    (run,) = github.actions.dispatched()
    killed = handle(runner, origin, github, "/bot kill", 222, "kill")
    running.join(timeout=1800)
    assert killed.exit_code == 0, killed.summary()
    assert (run.status, run.conclusion) == ("completed", "cancelled")
    assert backend.processes[run.id].poll() is not None  # act's run was stopped
    assert (CUSTOM, "error", "killed by /bot kill") in statuses(github)
    # the run's follower may post its report before the kill's reply is posted: each is found by what it says
    assert finished and finished[0].exit_code == 0, finished[0].summary() if finished else "bot.yml did not end"
    reports = [body for body in github.bodies() if body.startswith(f"## CI report: [L0 Test #{run.id}]")]
    link = f"[L0 Test run {run.id}]({github.url}{REPOSITORY}/actions/runs/{run.id})"
    cancelled = f"- cancelled {link}: killed by /bot kill\n"
    kill_replies = [body for body in github.bodies() if body.endswith(cancelled) and body not in reports]
    assert len(kill_replies) == 1, github.bodies()
    assert len(reports) == 1 and "**ABORTED**" in reports[0], github.bodies()


def _member(data: bytes, name: str) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.read(name).decode()
