"""Jenkins through python-jenkins: trigger, queue items, builds and their parameters, stop, cancel, console
text, test reports. Every answer becomes a value of dispatch/model.py; every fault one DispatchError line.

    fault                                   a safe request (a read, stop,   the trigger (a POST that
                                            cancel)                         starts a build)
    connection refused, connect timeout     retried (nothing was sent)      retried
    403 "No valid crumb" (crumb expired)    a new crumb, retried            a new crumb, retried
    5xx, 429, read timeout, dropped         retried                         TriggerLost: Jenkins may have
      connection                                                            queued it; look before retrying
    401, 403                                an error naming JENKINS_USER and JENKINS_API_TOKEN (never values)
    404                                     NotFound (the caller knows what a missing item means)

Retries are bounded (RetryPolicy.attempts) with a doubling pause. python-jenkins wraps requests' errors in
its own (and says "does not exist" for a 502 of a queue item), so the fault is read from the chain of causes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urljoin

import jenkins
import requests

from ci_tool.dispatch.faults import AccessHints, Fault, RetryPolicy, classify, refused_access, retrying
from ci_tool.dispatch.model import Build, CaseResult, Console, QueueItem
from ci_tool.errors import DispatchError
from ci_tool.layout import (
    HTTP_TIMEOUT_SECONDS,
    JENKINS_TOKEN_ENV,
    JENKINS_URL_ENV,
    JENKINS_USER_ENV,
)
from ci_tool.outcomes import BuildResult, TestOutcome

T = TypeVar("T")
BUILDS_LOOKED_AT = 100  # the newest builds of a job searched for a comment's or a pull request's builds
_PARAMETERS_TREE = "actions[parameters[name,value]]"
_CASE_OUTCOMES = {
    "PASSED": TestOutcome.PASSED,
    "FIXED": TestOutcome.PASSED,
    "FAILED": TestOutcome.FAILED,
    "REGRESSION": TestOutcome.FAILED,
    "SKIPPED": TestOutcome.SKIPPED,
}


class NotFound(DispatchError):
    """Jenkins answered 404: the job, build or queue item is not there (any more)."""


class TriggerLost(DispatchError):
    """The trigger's answer was lost after it was sent: Jenkins may or may not have queued the build."""


def job_path(job: str) -> str:
    """A job's path under the Jenkins root: `folder/L0_MergeRequest` -> `job/folder/job/L0_MergeRequest`."""
    return "/".join(f"job/{part}" for part in job.split("/"))


def _parameters(actions: object) -> dict[str, str]:
    values: dict[str, str] = {}
    for action in actions if isinstance(actions, list) else []:
        for parameter in action.get("parameters", []) if isinstance(action, dict) else []:
            if isinstance(parameter, dict) and "name" in parameter:
                value = parameter.get("value")
                values[str(parameter["name"])] = "" if value is None else str(value).lower() if isinstance(
                    value, bool
                ) else str(value)
    return values


def _build(job: str, data: Mapping[str, Any]) -> Build:
    result = data.get("result")
    return Build(
        job=job,
        number=int(data["number"]),
        url=str(data.get("url", "")),
        building=bool(data.get("building", False)),
        result=BuildResult(str(result)) if result in BuildResult.__members__ else None,
        parameters=_parameters(data.get("actions")),
    )


class JenkinsClient:
    """One Jenkins server. Credentials come from the caller (the environment), never from flags."""

    def __init__(
        self,
        url: str,
        *,
        user: str | None,
        token: str | None,
        timeout_seconds: float = HTTP_TIMEOUT_SECONDS,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.url = url.rstrip("/") + "/"
        self.has_credentials = bool(user and token)
        self.timeout_seconds = timeout_seconds
        self.retry = retry or RetryPolicy()
        self.server = jenkins.Jenkins(self.url, username=user or None, password=token or None, timeout=timeout_seconds)

    # -- the fault policy ------------------------------------------------------------------------

    def _call(self, what: str, work: Callable[[], T], *, safe: bool = True) -> T:
        def read_fault(error: Exception) -> Fault | None:
            if isinstance(error, jenkins.JenkinsException | requests.RequestException):
                return classify(error, self.timeout_seconds)
            return None

        def judge(fault: Fault, attempt: int) -> None:
            if fault.status == 404:
                raise NotFound(f"{what}: expected Jenkins to have it, found HTTP 404")
            if fault.status in (401, 403) and not fault.crumb:
                raise self._credentials_error(what, fault)
            if fault.crumb:
                self.server.crumb = None  # ask the crumb issuer again: Jenkins refused the request unread
            elif fault.sent and not safe:
                raise TriggerLost(f"{what}: expected Jenkins to answer, found {fault.words}")
            elif fault.sent and not fault.retryable_when_sent:
                raise DispatchError(f"{what}: expected Jenkins to accept the request, found {fault.words}")
            if attempt == self.retry.attempts:
                raise DispatchError(
                    f"{what}: expected Jenkins to answer at {self.url}, found {fault.words} "
                    f"({attempt} attempt{'s' if attempt != 1 else ''})",
                    hint=f"check {JENKINS_URL_ENV} (or --jenkins-url) and that Jenkins is up, then comment again",
                )

        return retrying(work, policy=self.retry, read_fault=read_fault, judge=judge)

    def _credentials_error(self, what: str, fault: Fault) -> DispatchError:
        variables = f"{JENKINS_USER_ENV} and {JENKINS_TOKEN_ENV}"
        hints = AccessHints(
            missing=f"set {variables} (an API token of a Jenkins user who may build the job)",
            invalid=f"{JENKINS_TOKEN_ENV} is not a current API token of {JENKINS_USER_ENV}: create a new one in "
            "Jenkins",
            forbidden=f"give the user in {JENKINS_USER_ENV} the Job/Build, Job/Cancel and Job/Read permissions",
        )
        return refused_access(what, fault, service="Jenkins", accepting=f"the credentials in {variables}",
                              given=self.has_credentials, hints=hints)  # fmt: skip

    # -- requests --------------------------------------------------------------------------------

    def trigger(self, job: str, parameters: Mapping[str, str]) -> int:
        """POST buildWithParameters once (retried only where Jenkins cannot have queued it); the queue item id.
        TriggerLost when the answer was lost: the caller looks for the build before trying again."""

        def post() -> int:
            try:
                return int(self.server.build_job(job, dict(parameters)))
            except jenkins.EmptyResponseException:  # accepted, but no Location: as good as a lost answer
                raise TriggerLost(
                    f"trigger {job}: expected a Location header naming the queue item, found none"
                ) from None

        return self._call(f"trigger {job}", post, safe=False)

    def queue_item(self, queue_id: int) -> QueueItem | None:
        """The queue item, or None once Jenkins has forgotten it (minutes after it left the queue)."""
        try:
            data = self._call(f"read queue item {queue_id}", lambda: self.server.get_queue_item(queue_id))
        except NotFound:
            return None
        return self._queue_item(data)

    def _queue_item(self, data: Mapping[str, Any]) -> QueueItem:
        executable = data.get("executable") or {}
        return QueueItem(
            id=int(data["id"]),
            url=urljoin(self.url, f"queue/item/{data['id']}/"),
            build_number=int(executable["number"]) if "number" in executable else None,
            build_url=str(executable.get("url", "")),
            cancelled=bool(data.get("cancelled", False)),
            why=str(data.get("why") or ""),
            parameters=_parameters(data.get("actions")),
        )

    def queued(self, job: str) -> list[QueueItem]:
        """The job's items waiting in the queue."""
        items = self._call("read the queue", self.server.get_queue_info)
        path = job_path(job) + "/"
        return [
            self._queue_item(item)
            for item in items
            if isinstance(item, dict) and str((item.get("task") or {}).get("url", "")).endswith(path)
        ]

    def builds(self, job: str) -> list[Build]:
        """The job's newest builds (BUILDS_LOOKED_AT), newest first, with their parameters."""
        return self._job_builds(job, _PARAMETERS_TREE)

    def _job_builds(self, job: str, actions_tree: str) -> list[Build]:
        return [_build(job, build) for build in self._builds_json(job, actions_tree)]

    def _builds_json(self, job: str, actions_tree: str) -> list[dict[str, Any]]:
        """The newest builds of a job as Jenkins' JSON, with the `actions` fields `actions_tree` names."""
        query = f"?tree=builds[number,url,building,result,{actions_tree}]{{0,{BUILDS_LOOKED_AT}}}"
        data = self._call(f"read the builds of {job}", lambda: self.server.get_info(job_path(job), query))
        builds = data.get("builds", []) if isinstance(data, dict) else []
        return [build for build in builds if isinstance(build, dict)]

    def downstream(self, test_job: str, job: str, number: int) -> list[Build]:
        """The builds of `test_job` that build `number` of `job` started, oldest first."""
        found = []
        for build in self._builds_json(test_job, "actions[causes[upstreamProject,upstreamBuild]]"):
            causes = [c for a in build.get("actions", []) if isinstance(a, dict) for c in a.get("causes", [])]
            if any(c.get("upstreamProject") == job and c.get("upstreamBuild") == number for c in causes):
                found.append(_build(test_job, build))
        return sorted(found, key=lambda b: b.number)

    def build(self, job: str, number: int) -> Build:
        """One build; NotFound when it is not (or no longer) there."""
        return _build(job, self._call(f"read build {number} of {job}", lambda: self.server.get_build_info(job, number)))

    def stop(self, job: str, number: int) -> None:
        self._call(f"stop build {number} of {job}", lambda: self.server.stop_build(job, number))

    def cancel(self, queue_id: int) -> None:
        self._call(f"cancel queue item {queue_id}", lambda: self.server.cancel_queue(queue_id))

    def console(self, job: str, number: int, start: int) -> Console:
        """The console text from `start` on (Jenkins' progressive text), and where the next piece starts."""
        url = urljoin(self.url, f"{job_path(job)}/{number}/logText/progressiveText")
        request = requests.Request("GET", url, params={"start": start})
        what = f"read the console of build {number} of {job}"
        response = self._call(what, lambda: self.server.jenkins_request(request))
        text = response.text
        return Console(
            text,
            next_start=int(response.headers.get("X-Text-Size", start + len(text.encode()))),
            more=response.headers.get("X-More-Data", "").lower() == "true",
        )

    def artifact(self, job: str, number: int, path: str) -> object | None:
        """A JSON artifact of a build, or None when the build archived none by that name."""
        return self._call(
            f"read {path} of build {number} of {job}", lambda: self.server.get_build_artifact(job, number, path)
        )

    def test_cases(self, job: str, number: int) -> tuple[CaseResult, ...]:
        """The build's test report (the JUnit files its stages recorded); () when it has none."""
        report = self._call(
            f"read the test report of build {number} of {job}", lambda: self.server.get_build_test_report(job, number)
        )
        cases = []
        for suite in (report or {}).get("suites", []):
            for case in suite.get("cases", []):
                cases.append(
                    CaseResult(
                        class_name=str(case.get("className", "")),
                        name=str(case.get("name", "")),
                        outcome=_CASE_OUTCOMES.get(str(case.get("status")), TestOutcome.ERROR),
                        duration_seconds=float(case.get("duration") or 0.0),
                        message=str(case.get("errorDetails") or case.get("skippedMessage") or ""),
                        output=str(case.get("errorStackTrace") or ""),
                        properties=_properties(case.get("properties")),
                    )
                )
        return tuple(cases)


def _properties(found: object) -> dict[str, str]:
    """A case's `properties` (the junit step's keepProperties: a JSON object); {} without any."""
    return {str(key): str(value) for key, value in found.items()} if isinstance(found, dict) else {}
