"""Jenkins through python-jenkins: trigger, queue items, builds and their parameters, stop, cancel, console
text, test reports. Every answer becomes a value of dispatch/model.py; every fault one DispatchError line.

    fault                                   a safe request (a read, stop,   the trigger (a POST that
                                            cancel)                         starts a build)
    connection refused, connect timeout     retried (nothing was sent)      retried
    403 "No valid crumb" (crumb expired)    a new crumb, retried            a new crumb, retried
    500, 503, 429 (Jenkins said no)         retried                         TriggerLost (server_error): one
                                                                            look, then a quick retry
    read timeout, dropped connection,       retried                         TriggerLost: Jenkins may have
      a proxy's 502 or 504                                                  queued it; look before retrying
    other 4xx                               an error                        an error (not queued, not retried)
    401, 403                                an error naming JENKINS_USER and JENKINS_API_TOKEN (never values)
    404                                     NotFound (the caller knows what a missing item means)

Retries are bounded (RetryPolicy.attempts) with a doubling pause. python-jenkins wraps requests' errors in
its own (and says "does not exist" for a 502 of a queue item), so the fault is read from the chain of causes.
python-jenkins sends the requests (auth, crumbs, timeouts); the JSON of every answer is read by
dispatch/answers.py, which turns an answer of another shape into one line. The URL is kept and shown
without userinfo (dispatch/urls.py): `user:token@` in it becomes the client's credentials.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import urljoin

import requests

from ci_tool.dispatch import answers
from ci_tool.dispatch.faults import AccessHints, Fault, RetryPolicy, classify, refused_access, retrying
from ci_tool.dispatch.model import Build, Console, JenkinsCase, QueueItem
from ci_tool.dispatch.requirements import client_module
from ci_tool.dispatch.urls import split_userinfo
from ci_tool.errors import DispatchError
from ci_tool.layout import (
    HTTP_TIMEOUT_SECONDS,
    JENKINS_TOKEN_ENV,
    JENKINS_URL_ENV,
    JENKINS_USER_ENV,
    TRIGGER_TIMEOUT_SECONDS,
)

jenkins = client_module("jenkins", client="Jenkins", distribution="python-jenkins")
T = TypeVar("T")
BUILDS_LOOKED_AT = 100  # the newest builds of a job searched for a comment's or a pull request's builds
_PARAMETERS_TREE = "actions[parameters[name,value]]"


class NotFound(DispatchError):
    """Jenkins answered 404: the job, build or queue item is not there (any more)."""


GATEWAY_STATUSES = (502, 504)  # a proxy's answer that Jenkins behind it did not give in time: it may go on


class TriggerLost(DispatchError):
    """The trigger's answer was lost after it was sent: Jenkins may or may not have queued the build.
    `server_error`: Jenkins answered 5xx or 429 itself: it said it did not take the request, so one look for
    the build is enough before a quick retry; no answer at all, or a proxy's 502 or 504 (Jenkins behind it may
    go on), may hide a build queued late."""

    def __init__(self, message: str, *, server_error: bool = False) -> None:
        super().__init__(message)
        self.server_error = server_error


def job_path(job: str) -> str:
    """A job's path under the Jenkins root: `folder/L0_MergeRequest` -> `job/folder/job/L0_MergeRequest`."""
    return "/".join(f"job/{part}" for part in job.split("/"))


class JenkinsClient:
    """One Jenkins server. Credentials come from the caller (the environment), or from the URL's userinfo
    when the caller has none; `url` never holds them."""

    def __init__(
        self,
        url: str,
        *,
        user: str | None,
        token: str | None,
        timeout_seconds: float = HTTP_TIMEOUT_SECONDS,
        trigger_timeout_seconds: float = TRIGGER_TIMEOUT_SECONDS,
        retry: RetryPolicy | None = None,
    ) -> None:
        split = split_userinfo(url)
        if not (user and token):
            user, token = split.user, split.password
        self.url = split.url.rstrip("/") + "/"
        self.has_credentials = bool(user and token)
        self.timeout_seconds = timeout_seconds
        self.trigger_timeout_seconds = max(trigger_timeout_seconds, timeout_seconds)
        self.retry = retry or RetryPolicy()
        self.server = jenkins.Jenkins(self.url, username=user or None, password=token or None, timeout=timeout_seconds)

    # -- the fault policy ------------------------------------------------------------------------

    def _call(self, what: str, work: Callable[[], T], *, safe: bool = True, timeout_seconds: float | None = None) -> T:
        waited = timeout_seconds or self.timeout_seconds

        def read_fault(error: Exception) -> Fault | None:
            crumb = answers.AnswerSource(what, urljoin(self.url, "crumbIssuer/api/json"))
            if isinstance(error, json.JSONDecodeError):  # python-jenkins read a crumb that is no JSON
                crumb.parse(error.doc)
            if isinstance(error, TypeError | KeyError):  # python-jenkins read a crumb of another shape
                raise crumb.error("", "an object with crumb and crumbRequestField", self.server.crumb) from None
            if isinstance(error, jenkins.JenkinsException | requests.RequestException):
                return classify(error, waited)
            return None

        def judge(fault: Fault, attempt: int) -> None:
            if fault.status == 404:
                raise NotFound(f"{what}: expected Jenkins to have it, found HTTP 404")
            if fault.status in (401, 403) and not fault.crumb:
                raise self._credentials_error(what, fault)
            if fault.crumb:
                self.server.crumb = None  # ask the crumb issuer again: Jenkins refused the request unread
            elif fault.sent and not safe and fault.status is not None and not fault.retryable_when_sent:
                raise DispatchError(f"{what}: expected Jenkins to accept the request, found {fault.words}")
            elif fault.sent and not safe:
                raise TriggerLost(f"{what}: expected Jenkins to answer, found {fault.words}",
                                  server_error=fault.status not in (None, *GATEWAY_STATUSES))  # fmt: skip
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

    def _get(self, what: str, path: str, params: Mapping[str, str | int] | None = None) -> requests.Response:
        request = requests.Request("GET", urljoin(self.url, path), params=dict(params or {}))
        return self._call(what, lambda: self.server.jenkins_request(request))

    def _json(
        self, what: str, path: str, params: Mapping[str, str | int] | None = None
    ) -> tuple[answers.AnswerSource, object]:
        """A GET's JSON, with the AnswerSource that reads it (named by the request and its URL as shown)."""
        response = self._get(what, path, params)
        answer = answers.AnswerSource(what, urljoin(self.url, path))
        return answer, answer.parse(response.text, response.headers.get("Content-Type", ""))

    # -- requests --------------------------------------------------------------------------------

    def trigger(self, job: str, parameters: Mapping[str, str]) -> int:
        """POST buildWithParameters once (retried only where Jenkins cannot have queued it); the queue item id.
        TriggerLost when the answer was lost: the caller looks for the build before trying again."""

        def post() -> int:
            # the trigger waits longer than a read: an answer given up on is a lost one, looked for before a retry
            self.server.timeout = self.trigger_timeout_seconds
            try:
                return int(self.server.build_job(job, dict(parameters)))
            except jenkins.EmptyResponseException:  # accepted, but no Location: as good as a lost answer
                raise TriggerLost(
                    f"trigger {job}: expected a Location header naming the queue item, found none"
                ) from None
            except ValueError:  # a Location that names no queue item number
                raise TriggerLost(
                    f"trigger {job}: expected a Location header naming the queue item, found another one"
                ) from None
            finally:
                self.server.timeout = self.timeout_seconds

        return self._call(f"trigger {job}", post, safe=False, timeout_seconds=self.trigger_timeout_seconds)

    def queue_item(self, queue_id: int) -> QueueItem | None:
        """The queue item, or None once Jenkins has forgotten it (minutes after it left the queue)."""
        try:
            answer, data = self._json(f"read queue item {queue_id}", f"queue/item/{queue_id}/api/json")
        except NotFound:
            return None
        return answers.queue_item(answer, self.url, data)

    def queued(self, job: str) -> list[QueueItem]:
        """The job's items waiting in the queue."""
        answer, data = self._json("read the queue", "queue/api/json")
        return answers.queue(answer, self.url, data, job_path(job) + "/")

    def builds(self, job: str) -> list[Build]:
        """The job's newest builds (BUILDS_LOOKED_AT), newest first, with their parameters."""
        return [build for build, _ in self._builds(job, _PARAMETERS_TREE)]

    def _builds(self, job: str, actions_tree: str) -> list[tuple[Build, Mapping[str, object]]]:
        """The newest builds of a job, with the `actions` fields `actions_tree` names (and their raw JSON)."""
        tree = f"builds[number,url,building,result,{actions_tree}]{{0,{BUILDS_LOOKED_AT}}}"
        answer, data = self._json(f"read the builds of {job}", f"{job_path(job)}/api/json", {"tree": tree})
        return answers.builds(answer, job, data)

    def downstream(self, test_job: str, job: str, number: int) -> list[Build]:
        """The builds of `test_job` that build `number` of `job` started, oldest first."""
        found = [
            build
            for build, raw in self._builds(test_job, "actions[causes[upstreamProject,upstreamBuild]]")
            if (job, number) in answers.upstream_causes(raw)
        ]
        return sorted(found, key=lambda b: b.number)

    def build(self, job: str, number: int) -> Build:
        """One build; NotFound when it is not (or no longer) there."""
        answer, data = self._json(f"read build {number} of {job}", f"{job_path(job)}/{number}/api/json")
        return answers.build(answer, job, data)

    def stop(self, job: str, number: int) -> None:
        self._call(f"stop build {number} of {job}", lambda: self.server.stop_build(job, number))

    def cancel(self, queue_id: int) -> None:
        self._call(f"cancel queue item {queue_id}", lambda: self.server.cancel_queue(queue_id))

    def console(self, job: str, number: int, start: int) -> Console:
        """The console text from `start` on (Jenkins' progressive text), and where the next piece starts.
        An X-Text-Size that is no number is replaced by what it stands for: where this piece ends."""
        what = f"read the console of build {number} of {job}"
        response = self._get(what, f"{job_path(job)}/{number}/logText/progressiveText", {"start": start})
        text = response.text
        size = response.headers.get("X-Text-Size", "")
        return Console(
            text,
            next_start=int(size) if size.isdigit() else start + len(text.encode()),
            more=response.headers.get("X-More-Data", "").lower() == "true",
        )

    def artifact(self, job: str, number: int, path: str) -> object | None:
        """A JSON artifact of a build, or None when the build archived none by that name."""
        try:
            _, data = self._json(f"read {path} of build {number} of {job}", f"{job_path(job)}/{number}/artifact/{path}")
        except NotFound:
            return None
        return data

    def test_cases(self, job: str, number: int) -> tuple[JenkinsCase, ...]:
        """The build's test report (the JUnit files its stages recorded); () when it has none."""
        what = f"read the test report of build {number} of {job}"
        try:
            answer, data = self._json(what, f"{job_path(job)}/{number}/testReport/api/json")
        except NotFound:
            return ()
        return answers.test_cases(answer, data)
