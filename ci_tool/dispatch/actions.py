"""GitHub Actions through PyGithub's requester: the calls a `/bot` dispatch makes on the generated workflow
(l0-test.yml), on the one GitHubClient (its token, fault policy, retries and rate-limit waits).

    default_branch  GET repos/O/R                                  whose workflow file a dispatch runs
    dispatch     POST actions/workflows/W/dispatches {ref, inputs}    204: queued, no run id (run_name.py)
    runs         GET  actions/workflows/W/runs?branch&event&per_page   the newest RUNS_LOOKED_AT runs
    run          GET  actions/runs/ID                                  one run (RunNotFound when gone)
    cancel       POST actions/runs/ID/cancel                           202; 409 when it had ended: False
    artifacts    GET  actions/runs/ID/artifacts                        name, id, expired
    download     GET  actions/artifacts/ID/zip                         302 to a signed URL, fetched without
                                                                       the token (it must not leave GitHub)

A run is a model.Build (number: the run id, url: its page, parameters: its run name's fields), so the bot's
statuses and final CI report read it as they read a Jenkins build. The dispatch is never repeated once sent
unless GitHub refused it unread: a lost answer (5xx, a dropped connection, no answer in time) is
DispatchLost, and the caller looks for the run before dispatching again. Every answer's fields are checked
(answers.AnswerSource): a run of another shape is one line naming the field, never a KeyError.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import requests

from ci_tool.dispatch.answers import AnswerSource
from ci_tool.dispatch.faults import classify
from ci_tool.dispatch.github import GitHubClient, GithubException
from ci_tool.dispatch.model import Build
from ci_tool.dispatch.run_name import parse_run_name
from ci_tool.dispatch.urls import shown
from ci_tool.errors import DispatchError
from ci_tool.layout import ACTIONS_WORKFLOW, GITHUB_TOKEN_ENV, HTTP_TIMEOUT_SECONDS
from ci_tool.outcomes import BuildResult

RUNS_LOOKED_AT = 100  # the newest runs of the workflow searched for a comment's or a pull request's runs
WORKFLOW_TITLE = "L0 Test"  # how replies and reports name the workflow's runs
# GitHub's conclusion of a completed run -> the build result the bot's statuses and reports speak
CONCLUSIONS: Mapping[str, BuildResult] = {
    "success": BuildResult.SUCCESS,
    "failure": BuildResult.FAILURE,
    "timed_out": BuildResult.FAILURE,
    "startup_failure": BuildResult.FAILURE,
    "cancelled": BuildResult.ABORTED,
    "skipped": BuildResult.NOT_BUILT,
    "neutral": BuildResult.NOT_BUILT,
    "stale": BuildResult.NOT_BUILT,
    "action_required": BuildResult.NOT_BUILT,
}


def forbidden_hint(workflow: str) -> str:
    """What to fix when GitHub refuses (403) or hides (404) the workflow from the token."""
    return (
        f"give {GITHUB_TOKEN_ENV} the actions: write permission (bot.yml's answer job; actions: read for its "
        f"follow job), and check that .github/workflows/{workflow} is on the default branch"
    )


class RunNotFound(DispatchError):
    """GitHub answered 404 for a run or an artifact: it is not (or no longer) there."""


class DispatchLost(DispatchError):
    """The dispatch's answer was lost after it was sent: GitHub may or may not have queued the run."""


@dataclass(frozen=True)
class Artifact:
    id: int
    name: str
    expired: bool


class ActionsClient:
    """One repository host's GitHub Actions, through `github` (its token and fault policy)."""

    def __init__(self, github: GitHubClient, *, workflow: str = ACTIONS_WORKFLOW) -> None:
        self.github = github
        self.workflow = workflow

    @property
    def api_url(self) -> str:
        return self.github.api_url

    def web_url(self, repository: str, path: str = "") -> str:
        """A page of the repository on the web (github.com, or the Enterprise host of the API)."""
        api = self.github.api_url
        host = "https://github.com" if api == "https://api.github.com" else api.removesuffix("/api/v3")
        return f"{host}/{repository}" + (f"/{path}" if path else "")

    def workflow_url(self, repository: str) -> str:
        return self.web_url(repository, f"actions/workflows/{self.workflow}")

    def _json(self, what: str, method: str, url: str, parameters: Mapping[str, object] | None = None) -> Any:
        requester = self.github.github.requester

        def call() -> Any:
            try:
                _, data = requester.requestJsonAndCheck(method, url, parameters=dict(parameters or {}))
            except GithubException as error:
                if error.status == 404:
                    raise RunNotFound(f"{what}: expected GitHub to have it, found HTTP 404") from None
                raise
            return data

        return self.github._call(what, call, forbidden=forbidden_hint(self.workflow))  # the one fault policy of GitHub

    def default_branch(self, repository: str) -> str:
        """The repository's default branch: a dispatch runs the workflow file it holds."""
        what = f"read the repository {repository}"
        answer = AnswerSource(what, shown(f"{self.api_url}/repos/{repository}"))
        data = answer.obj(self._json(what, "GET", f"/repos/{repository}"))
        branch = answer.text(data, "default_branch")
        if not branch:
            raise answer.error("default_branch", "a branch name", data.get("default_branch"))
        return branch

    def dispatch(self, repository: str, ref: str, inputs: Mapping[str, str]) -> None:
        """Dispatch the workflow at `ref` with `inputs`; DispatchLost when the answer was lost after it was sent."""
        what = f"dispatch {self.workflow} on {repository}"
        url = f"/repos/{repository}/actions/workflows/{self.workflow}/dispatches"
        requester = self.github.github.requester
        timeout = self.github.timeout_seconds

        def post() -> None:
            try:
                status, headers, output = requester.requestJson("POST", url, input={"ref": ref, "inputs": dict(inputs)})
            except requests.RequestException as error:
                fault = classify(error, timeout)
                if not fault.sent:
                    raise  # it never reached GitHub: the fault policy repeats it
                raise DispatchLost(f"{what}: expected GitHub to answer, found {fault.words}") from None
            if status >= 500:
                raise DispatchLost(f"{what}: expected GitHub to answer, found HTTP {status}")
            if status >= 400:
                data = json.loads(output) if output and output.lstrip().startswith("{") else {}
                raise requester.createException(status, headers, data)

        self.github._call(what, post, safe=False, forbidden=forbidden_hint(self.workflow))

    def runs(self, repository: str, *, branch: str) -> list[Build]:
        """The newest dispatched runs of the workflow on `branch`, newest first."""
        what = f"read the runs of {self.workflow} on {repository}"
        url = f"/repos/{repository}/actions/workflows/{self.workflow}/runs"
        data = self._json(what, "GET", url, {"branch": branch, "event": "workflow_dispatch",
                                             "per_page": RUNS_LOOKED_AT})  # fmt: skip
        answer = AnswerSource(what, shown(self.api_url + url))
        found = answer.items(answer.obj(data), "workflow_runs")
        return [self._build(answer, run, f"workflow_runs[{k}]") for k, run in enumerate(found)]

    def run(self, repository: str, run_id: int) -> Build:
        what = f"read run {run_id} of {repository}"
        url = f"/repos/{repository}/actions/runs/{run_id}"
        return self._build(AnswerSource(what, shown(self.api_url + url)), self._json(what, "GET", url))

    def cancel(self, repository: str, run_id: int) -> bool:
        """Cancel a run; False when it had ended (GitHub's 409)."""
        what = f"cancel run {run_id} of {repository}"
        url = f"/repos/{repository}/actions/runs/{run_id}/cancel"
        requester = self.github.github.requester

        def post() -> bool:
            try:
                requester.requestJsonAndCheck("POST", url)
            except GithubException as error:
                if error.status == 409:
                    return False
                raise
            return True

        return self.github._call(what, post, forbidden=forbidden_hint(self.workflow))  # a repeat is harmless

    def artifacts(self, repository: str, run_id: int) -> list[Artifact]:
        what = f"read the artifacts of run {run_id} of {repository}"
        url = f"/repos/{repository}/actions/runs/{run_id}/artifacts"
        answer = AnswerSource(what, shown(self.api_url + url))
        data = answer.obj(self._json(what, "GET", url, {"per_page": 100}))
        found = []
        for k, item in enumerate(answer.items(data, "artifacts")):
            path = f"artifacts[{k}]"
            item = answer.obj(item, path)
            found.append(Artifact(answer.integer(item, "id", path), answer.text(item, "name", path),
                                  answer.flag(item, "expired", path)))  # fmt: skip
        return found

    def download(self, repository: str, artifact: Artifact) -> bytes:
        """An artifact's zip: GitHub redirects to a signed URL, fetched without GitHub's token."""
        what = f"download the artifact {artifact.name!r} of {repository}"
        url = f"/repos/{repository}/actions/artifacts/{artifact.id}/zip"
        requester = self.github.github.requester

        def get() -> bytes:
            status, headers, _ = requester.requestJson("GET", url)
            location = {str(k).lower(): str(v) for k, v in headers.items()}.get("location")
            if status == 404:
                raise RunNotFound(f"{what}: expected GitHub to have it, found HTTP 404")
            if status >= 400:
                raise requester.createException(status, headers, {})
            if status not in (301, 302, 303, 307) or not location:
                raise DispatchError(f"{what}: expected a redirect to the zip, found HTTP {status} without one")
            response = requests.get(location, timeout=self.github.timeout_seconds or HTTP_TIMEOUT_SECONDS)
            response.raise_for_status()
            return response.content

        return self.github._call(what, get, forbidden=forbidden_hint(self.workflow))

    def _build(self, answer: AnswerSource, value: object, path: str = "") -> Build:
        data = answer.obj(value, path)
        run_id = answer.integer(data, "id", path)
        state = answer.text(data, "status", path)
        if not state:
            raise answer.error(_join(path, "status"), "the run's status", data.get("status"))
        completed = state == "completed"  # GitHub's word, read here once: a run becomes building or a result
        conclusion = answer.text(data, "conclusion", path)
        result = None
        if completed:
            if conclusion not in CONCLUSIONS:
                raise answer.error(_join(path, "conclusion"), "one of " + ", ".join(CONCLUSIONS), conclusion)
            result = CONCLUSIONS[conclusion]
        name = parse_run_name(answer.text(data, "display_title", path) or answer.text(data, "name", path))
        parameters = (
            {}
            if name is None
            else {
                "PR_NUMBER": str(name.pull_request),
                "HEAD_SHA": name.head_sha,
                "COMMENT_ID": str(name.comment_id),
                "REQUEST_DIGEST": name.request_digest,
            }
        )
        page = shown(answer.text(data, "html_url", path))
        return Build(WORKFLOW_TITLE, run_id, page, building=not completed, result=result,
                     parameters=parameters, log_url=page)  # fmt: skip


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
