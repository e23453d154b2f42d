"""Dispatch overhead: from a `/bot run` comment event to the Jenkins build number, against loopback Jenkins
and GitHub servers that answer at once (tests/helpers/fake_jenkins.py, fake_github.py): what is
measured is ci-tool's own work: reading the event and allowlist, the pull request (GitHub), loading the catalog
and planning, the plan reply, the idempotency look-up (queue and builds), the trigger, and the queue item naming
the build.

    in-process   ci_tool.cli.main(["bot", "handle", ...]) up to the build number (the "triggered:" line),
                 and the whole handle (then the reply edit and the pending status)
    process      `ci-tool bot handle ...` as a process, start-up included (what the bot workflow runs)

    .venv/bin/python bench/dispatch_bench.py [--repeats 20]

Each iteration is a new comment (a new build) with a fresh history. Best and median of REPEATS are shown.
Exit status 1 when the in-process median to the build number is 1 s or more (the goal is under 1 s).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ci_tool.cli import main  # noqa: E402
from tests.helpers.fake_github import FakeGitHub, FakePull  # noqa: E402
from tests.helpers.fake_jenkins import FakeJenkins  # noqa: E402

FIXTURES = ROOT / "tests" / "ci_tool" / "bot" / "fixtures"
GOAL_SECONDS = 1.0


class Stamp(io.StringIO):
    """stdout that notes when the "triggered:" line is written."""

    def __init__(self) -> None:
        super().__init__()
        self.triggered_at: float | None = None

    def write(self, text: str) -> int:
        if self.triggered_at is None and "triggered: build " in text:
            self.triggered_at = time.perf_counter()
        return super().write(text)


def event_file(folder: Path, comment_id: int) -> Path:
    payload = {
        "action": "created",
        "issue": {"number": 123, "state": "open", "labels": [], "pull_request": {"url": "x"}},
        "comment": {"id": comment_id, "body": "/bot run --disable-fail-fast",
                    "user": {"login": "maintainer-amy", "type": "User"}, "author_association": "MEMBER"},
        "repository": {"full_name": "example/ci-tool"},
        "sender": {"login": "maintainer-amy", "type": "User"},
    }  # fmt: skip
    path = folder / f"event-{comment_id}.json"
    path.write_text(json.dumps(payload))
    return path


def arguments(event: Path, history: Path) -> list[str]:
    return [
        "bot", "handle", "--event", str(event), "--allowlist", str(FIXTURES / "allowlist.yml"),
        "--catalog", str(FIXTURES / "stages.yml"), "--test-db", str(FIXTURES / "test-db"),
        "--history", str(history), "--poll-seconds", "0", "--retry-seconds", "0",
    ]  # fmt: skip


def summary(name: str, seconds: list[float]) -> str:
    return f"| {name} | {min(seconds) * 1000:.0f} ms | {statistics.median(seconds) * 1000:.0f} ms |"


def main_bench() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    options = parser.parse_args()
    jenkins, github = FakeJenkins(), FakeGitHub()
    github.add_pull("example/ci-tool", FakePull(123, files=["src/kvengine/pool.py", "docs/index.md"]))
    environment = {
        "CI_TOOL_JENKINS_URL": jenkins.url, "JENKINS_USER": jenkins.user, "JENKINS_API_TOKEN": jenkins.token,
        "GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": github.token, "NO_PROXY": "127.0.0.1",
    }  # fmt: skip
    os.environ.update(environment)
    to_number, whole, process = [], [], []
    requests_per_dispatch = 0
    try:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            for k in range(options.repeats):
                before = len(jenkins.requests) + len(github.requests)
                out = Stamp()
                start = time.perf_counter()
                with contextlib.redirect_stdout(out):
                    code = main(arguments(event_file(folder, 1000 + k), folder / f"h{k}.sqlite"))
                end = time.perf_counter()
                if code != 0 or out.triggered_at is None:
                    print(out.getvalue(), file=sys.stderr)
                    return 2
                to_number.append(out.triggered_at - start)
                whole.append(end - start)
                requests_per_dispatch = len(jenkins.requests) + len(github.requests) - before
                start = time.perf_counter()
                done = subprocess.run(
                    [str(Path(sys.executable).parent / "ci-tool"),
                     *arguments(event_file(folder, 5000 + k), folder / f"p{k}.sqlite")],
                    capture_output=True, text=True, env={**os.environ, **environment}, check=False,
                )  # fmt: skip
                process.append(time.perf_counter() - start)
                if done.returncode != 0:
                    print(done.stdout + done.stderr, file=sys.stderr)
                    return 2
    finally:
        jenkins.close()
        github.close()
    print(f"{options.repeats} dispatches each; {requests_per_dispatch} HTTP requests per dispatch\n")
    print("| event -> | best | median |\n|---|---|---|")
    print(summary("build number, in-process", to_number))
    print(summary("whole handle (plus reply edit and pending status), in-process", whole))
    print(summary("whole handle, `ci-tool bot handle` process", process))
    return 0 if statistics.median(to_number) < GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main_bench())
