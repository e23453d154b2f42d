"""GitHub Actions in the loopback GitHub (fake_github.py): the workflow runs a dispatch starts, and the
backends that "run" them.

    GET  repos/O/R                                   default_branch
    POST repos/O/R/actions/workflows/W/dispatches    204; 422 for an input the generated workflow does not
                                                     declare (read from .github/workflows/W), as GitHub does
    GET  repos/O/R/actions/workflows/W/runs          newest first; filtered by branch, event and status
    GET  repos/O/R/actions/runs/ID                   one run (a look: it moves the backend on)
    POST repos/O/R/actions/runs/ID/cancel            202; 409 once it completed
    GET  repos/O/R/actions/runs/ID/artifacts         name, id, expired
    GET  repos/O/R/actions/artifacts/ID/zip          302 to an unauthenticated blob URL (as GitHub's signed one)

A run's name is what the generated workflow's `run-name:` makes of its inputs (run_name.py's format;
test_actions_dispatch.py checks the generated file spells that expression). A backend decides how a run
goes: ScriptedBackend moves it queued -> in_progress -> completed over the client's looks (nothing waits on
the clock) and gives it the artifacts its Script names; another backend (a real runner) may do real work.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import yaml

from ci_tool.layout import ACTIONS_WORKFLOW
from ci_tool.outcomes import TestOutcome
from ci_tool.run.junit import CaseResult, junit_document
from tests.helpers.loopback import Answer, Request, json_answer

if TYPE_CHECKING:
    from tests.helpers.fake_github import FakeGitHub

REPO_ROOT = Path(__file__).resolve().parents[2]
ACTIVE = ("queued", "in_progress", "waiting", "requested", "pending")


def declared_inputs(workflow: str = ACTIONS_WORKFLOW) -> frozenset[str]:
    """The workflow_dispatch inputs the generated workflow declares (GitHub refuses any other)."""
    document = yaml.safe_load((REPO_ROOT / ".github" / "workflows" / workflow).read_text(encoding="utf-8"))
    triggers = document.get("on") or document.get(True)  # YAML 1.1 reads a bare `on:` as true
    return frozenset(triggers["workflow_dispatch"]["inputs"])


def run_name(inputs: Mapping[str, str]) -> str:
    """What the generated `run-name:` expression evaluates to (run_name.RUN_NAME_EXPRESSION)."""
    if not inputs.get("comment_id"):
        return "L0 Test"
    return (f"/bot run #{inputs['pr_number']} {inputs['head_sha']} comment {inputs['comment_id']} "
            f"request {inputs['request_digest']}")  # fmt: skip


def zipped(files: Mapping[str, bytes | str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def junit_zip(stage: str, cases: list[tuple[str, TestOutcome]]) -> bytes:
    """A stage's results artifact: the JUnit ci-tool writes (run/junit.py), stage-prefixed, with the node ids."""
    results = [
        CaseResult(
            nodeid,
            outcome,
            duration_seconds=1.5,
            stage=stage,
            message="AssertionError: boom" if outcome.is_failure else "",
            text="E   AssertionError: boom" if outcome.is_failure else "",
            properties=(("nodeid", nodeid), ("stage", stage)),
        )
        for nodeid, outcome in cases
    ]
    return zipped({"junit.xml": junit_document(stage, results), "result.json": "{}"})


def selection_zip(stages: list[str], request: Mapping[str, object], *, head: str) -> bytes:
    """The plan job's artifact: the run record (selection.json) and the request beside it."""
    record = {"stages": stages, "blocked": [], "custom_run": False, "head": head, "base": "b" * 40}
    return zipped({"selection.json": json.dumps(record), "request.json": json.dumps(request)})


@dataclass
class FakeRun:
    id: int
    repository: str
    workflow: str
    ref: str
    inputs: dict[str, str]
    status: str = "queued"
    conclusion: str | None = None
    looks: int = 0
    artifacts: dict[str, bytes] = field(default_factory=dict)  # name -> zip

    @property
    def name(self) -> str:
        return run_name(self.inputs)

    def json(self, web_url: str) -> dict[str, object]:
        return {"id": self.id, "name": "L0 Test", "display_title": self.name, "status": self.status,
                "conclusion": self.conclusion, "event": "workflow_dispatch", "head_branch": self.ref,
                "run_number": self.id % 1000, "path": f".github/workflows/{self.workflow}",
                "html_url": f"{web_url}{self.repository}/actions/runs/{self.id}"}  # fmt: skip


class Backend(Protocol):
    """What makes a dispatched run progress (every hook is called with the fake's lock held)."""

    def dispatched(self, run: FakeRun) -> None: ...
    def looked_at(self, run: FakeRun) -> None: ...
    def cancelled(self, run: FakeRun) -> None: ...


@dataclass
class Script:
    """How a scripted run goes: looks while queued and in progress, then its conclusion and artifacts."""

    conclusion: str = "success"
    looks_queued: int = 1
    looks_running: int = 2
    artifacts: dict[str, bytes] = field(default_factory=dict)


@dataclass
class ScriptedBackend:
    script: Script = field(default_factory=Script)
    listed_after_looks: int = 0  # the listing leaves a new run out this many times (GitHub lists it late)
    on_dispatch: Callable[[FakeRun], None] | None = None

    def dispatched(self, run: FakeRun) -> None:
        if self.on_dispatch is not None:
            self.on_dispatch(run)

    def looked_at(self, run: FakeRun) -> None:
        if run.status == "completed":
            return
        run.looks += 1
        if run.looks > self.script.looks_queued + self.script.looks_running:
            run.status, run.conclusion = "completed", self.script.conclusion
            run.artifacts = dict(self.script.artifacts)
        elif run.looks > self.script.looks_queued:
            run.status = "in_progress"

    def cancelled(self, run: FakeRun) -> None:
        run.status, run.conclusion = "completed", "cancelled"


class FakeActions:
    """The Actions state of a FakeGitHub; its answers are routed from fake_github.py."""

    def __init__(self, github: FakeGitHub) -> None:
        self.github = github
        self.backend: Backend = ScriptedBackend()
        self.runs: dict[int, FakeRun] = {}
        self.next_run_id = 7_000_000_001
        self.default_branch = "main"
        self.inputs = declared_inputs()
        self.listing_looks = 0
        self.blob_requests: list[Request] = []

    def add_run(self, repository: str, inputs: dict[str, str], *, status: str = "in_progress",
                conclusion: str | None = None, artifacts: dict[str, bytes] | None = None) -> FakeRun:  # fmt: skip
        run = FakeRun(self.next_run_id, repository, ACTIONS_WORKFLOW, self.default_branch, inputs, status=status,
                      conclusion=conclusion, artifacts=artifacts or {})  # fmt: skip
        self.next_run_id += 1
        self.runs[run.id] = run
        return run

    def dispatched(self) -> list[FakeRun]:
        return list(self.runs.values())

    # -- answers -------------------------------------------------------------------------------

    def repo(self, request: Request, repo: str) -> Answer:
        return json_answer({"full_name": repo, "default_branch": self.default_branch})

    def dispatch(self, request: Request, repo: str, workflow: str) -> Answer:
        body = json.loads(request.body)
        inputs = {str(k): str(v) for k, v in (body.get("inputs") or {}).items()}
        unexpected = sorted(set(inputs) - self.inputs)
        if unexpected:
            return json_answer({"message": f"Unexpected inputs provided: {unexpected}"}, 422)
        if body.get("ref") != self.default_branch:
            return json_answer({"message": f"No ref found for: {body.get('ref')}"}, 422)
        run = self.add_run(repo, inputs, status="queued")
        run.workflow = workflow
        self.backend.dispatched(run)
        return 204, {}, b""

    def list_runs(self, request: Request, repo: str, workflow: str) -> Answer:
        query = request.query
        listed = [run for run in reversed(self.runs.values()) if run.repository == repo and run.workflow == workflow]
        hidden = getattr(self.backend, "listed_after_looks", 0)
        self.listing_looks += 1
        if self.listing_looks <= hidden:
            listed = [run for run in listed if run.status != "queued"]
        for run in listed:
            self.backend.looked_at(run)
        if "branch" in query:
            listed = [run for run in listed if run.ref == query["branch"]]
        if query.get("event", "workflow_dispatch") != "workflow_dispatch":
            listed = []
        if "status" in query:
            wanted = query["status"]
            listed = [r for r in listed if r.status == wanted or r.conclusion == wanted]
        listed = listed[: int(query.get("per_page", "30"))]
        return json_answer({"total_count": len(listed),
                            "workflow_runs": [run.json(self.github.url) for run in listed]})  # fmt: skip

    def get_run(self, request: Request, repo: str, run_id: str) -> Answer:
        run = self.runs.get(int(run_id))
        if run is None or run.repository != repo:
            return json_answer({"message": "Not Found"}, 404)
        self.backend.looked_at(run)
        return json_answer(run.json(self.github.url))

    def cancel(self, request: Request, repo: str, run_id: str) -> Answer:
        run = self.runs.get(int(run_id))
        if run is None:
            return json_answer({"message": "Not Found"}, 404)
        if run.status == "completed":
            return json_answer({"message": "Cannot cancel a workflow run that is completed."}, 409)
        self.backend.cancelled(run)
        return json_answer({}, 202)

    def _artifact_ids(self) -> dict[int, tuple[FakeRun, str]]:
        found: dict[int, tuple[FakeRun, str]] = {}
        for run in self.runs.values():
            for k, name in enumerate(run.artifacts):
                found[run.id * 100 + k] = (run, name)
        return found

    def artifacts(self, request: Request, repo: str, run_id: str) -> Answer:
        run = self.runs.get(int(run_id))
        if run is None:
            return json_answer({"message": "Not Found"}, 404)
        rows = [{"id": run.id * 100 + k, "name": name, "expired": False, "size_in_bytes": len(data)}
                for k, (name, data) in enumerate(run.artifacts.items())]  # fmt: skip
        return json_answer({"total_count": len(rows), "artifacts": rows})

    def download(self, request: Request, repo: str, artifact_id: str) -> Answer:
        if int(artifact_id) not in self._artifact_ids():
            return json_answer({"message": "Not Found"}, 404)
        return 302, {"Location": f"{self.github.url}_blobs/artifacts/{artifact_id}?sig=signed"}, b""

    def blob(self, request: Request, artifact_id: str) -> Answer:
        """The signed blob URL: no token wanted (and none may be sent: it would leave GitHub)."""
        self.blob_requests.append(request)
        found = self._artifact_ids().get(int(artifact_id))
        if found is None:
            return 404, {}, b""
        run, name = found
        return 200, {"Content-Type": "application/zip"}, run.artifacts[name]
