"""A loopback Jenkins speaking the subset of its REST API that python-jenkins calls for the bot.

    GET  crumbIssuer/api/json                   the CSRF crumb (expire_crumb() makes a new one)
    POST job/J/buildWithParameters?...          201, Location: .../queue/item/N/
    GET  queue/api/json                         waiting items with their parameters
    GET  queue/item/N/api/json                  why / executable {number, url} / cancelled
    POST queue/cancelItem?id=N                  302 to the Referer
    GET  job/J/api/json?tree=builds[...]        newest builds with parameters and causes
    GET  job/J/N/api/json                       a build: building, result, parameters
    GET  job/J/N/logText/progressiveText?start  console text; X-Text-Size, X-More-Data
    POST job/J/N/stop                           302 to the build page
    GET  job/J/N/testReport/api/json            suites of cases (404 when none)
    GET  job/J/N/artifact/PATH                  an archived JSON artifact (404 when none)

A queue item names its build after `polls_to_start` looks; a build ends after `polls_to_end` looks at it,
as its Script says (result, console lines, the L0_Test builds it starts with their test cases). Nothing waits
on the clock: the client's polls move the fakes on. J is a job's path: `job/NAME`, or `job/FOLDER/job/NAME` for a
job in a folder, which the fake names `FOLDER/NAME` (as ci-tool's CI_TOOL_JENKINS_JOB and python-jenkins do).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.helpers.loopback import NOT_FOUND, Answer, Loopback, Request, json_answer

# A job's path: `/job/NAME`, `/job/FOLDER/job/NAME`, folders in folders too.
JOB = r"/job/(?P<job>[^/]+(?:/job/[^/]+)*)"


def job_path(job: str) -> str:
    """`folder/name` -> `job/folder/job/name`, the job's path under the Jenkins root."""
    return "/".join(f"job/{part}" for part in job.split("/"))


@dataclass
class Script:
    """How a build of the triggered job goes."""

    result: str = "SUCCESS"
    polls_to_end: int = 2
    console: tuple[str, ...] = ("Started by remote host", "Running ci-tool stage select", "Finished")
    downstream: tuple[tuple[str, tuple[dict[str, object], ...]], ...] = ()  # (result, test cases) per L0_Test build
    selection: dict[str, object] | None = None  # the archived selection.json


@dataclass
class FakeBuild:
    job: str
    number: int
    parameters: dict[str, str]
    script: Script
    url: str
    building: bool = True
    result: str | None = None
    polls: int = 0
    causes: list[dict[str, object]] = field(default_factory=list)
    cases: tuple[dict[str, object], ...] | None = None

    def json(self) -> dict[str, object]:
        return {
            "_class": "org.jenkinsci.plugins.workflow.job.WorkflowRun",
            "number": self.number,
            "url": self.url,
            "building": self.building,
            "result": self.result,
            "actions": [
                {"_class": "hudson.model.ParametersAction",
                 "parameters": [{"name": k, "value": v} for k, v in self.parameters.items()]},
                {"_class": "hudson.model.CauseAction", "causes": self.causes},
            ],
        }  # fmt: skip

    @property
    def console(self) -> str:
        lines = self.script.console if not self.building else self.script.console[: max(1, self.polls)]
        return "".join(line + "\n" for line in lines)


@dataclass
class FakeQueueItem:
    id: int
    job: str
    parameters: dict[str, str]
    polls_left: int
    hidden_looks: int = 0  # looks at the queue before the item shows (Jenkins still working on the POST)
    cancelled: bool = False
    build: FakeBuild | None = None


class FakeJenkins(Loopback):
    TEST_JOB = "L0_Test"

    def __init__(self, *, user: str = "bot", token: str = "s3cret-token") -> None:
        super().__init__()
        self.user, self.token = user, token
        self.crumb = "crumb-1"
        self.builds: dict[str, dict[int, FakeBuild]] = {}
        self.queue: dict[int, FakeQueueItem] = {}
        self.next_queue_id = 40
        self.polls_to_start = 1
        self.script = Script()
        self.hold = False  # builds never end while set (a run that a newer one kills)
        self.cancel_in_queue = False  # someone cancels each item in Jenkins before it starts
        self.before_start: Callable[[], None] | None = None  # runs as an item leaves the queue (another build)
        self.unlisted: set[int] = set()  # builds of the triggered job not listed yet (Jenkins still starting them)
        self.shown_after_looks = 0  # a new item shows in the queue only after this many looks at it (a slow Jenkins)

    def expire_crumb(self) -> None:
        self.crumb = f"crumb-{int(self.crumb.split('-')[1]) + 1}"

    def add_build(self, job: str, parameters: dict[str, str], script: Script | None = None, **state: Any) -> FakeBuild:
        builds = self.builds.setdefault(job, {})
        number = max(builds, default=0) + 1
        url = f"{self.url}{job_path(job)}/{number}/"
        build = FakeBuild(job, number, parameters, script or self.script, url, **state)
        builds[number] = build
        return build

    def triggered(self, job: str = "L0_MergeRequest") -> list[FakeBuild]:
        return list(self.builds.get(job, {}).values())

    # -- routing -------------------------------------------------------------------------------

    def arguments(self, groups: dict[str, str]) -> dict[str, str]:
        """A job in a folder is `folder/name` here, as ci-tool names it; its path spells `folder/job/name`."""
        if "job" in groups:
            groups = {**groups, "job": groups["job"].replace("/job/", "/")}
        return groups

    def answer(self, request: Request) -> Answer:
        expected = "Basic " + base64.b64encode(f"{self.user}:{self.token}".encode()).decode()
        if request.headers.get("authorization") != expected:
            return 401, {"WWW-Authenticate": 'Basic realm="Jenkins"'}, b"<html>Unauthorized</html>"
        if request.method == "POST" and request.headers.get("jenkins-crumb") != self.crumb:
            return 403, {"Content-Type": "text/html"}, b"<html>No valid crumb was included in the request</html>"
        return self.route(request, NOT_FOUND)

    def _crumb(self, request: Request) -> Answer:
        return json_answer({"crumb": self.crumb, "crumbRequestField": "Jenkins-Crumb"})

    def _trigger(self, request: Request, job: str) -> Answer:
        item = FakeQueueItem(self.next_queue_id, job, dict(request.query), self.polls_to_start,
                             hidden_looks=self.shown_after_looks)  # fmt: skip
        self.queue[item.id] = item
        self.next_queue_id += 1
        return 201, {"Location": f"{self.url}queue/item/{item.id}/"}, b""

    def _item_json(self, item: FakeQueueItem) -> dict[str, object]:
        data: dict[str, object] = {
            "_class": "hudson.model.Queue$WaitingItem",
            "id": item.id,
            "task": {"name": item.job, "url": f"{self.url}{job_path(item.job)}/"},
            "actions": [{"parameters": [{"name": k, "value": v} for k, v in item.parameters.items()]}],
            "params": "".join(f"\n{k}={v}" for k, v in item.parameters.items()),
            "why": "Waiting for next available executor",
            "cancelled": False,
        }
        if item.cancelled:
            data.update({"_class": "hudson.model.Queue$CancelledItem", "cancelled": True, "why": None})
        if item.build is not None:
            data.update({"_class": "hudson.model.Queue$LeftItem", "why": None,
                         "executable": {"number": item.build.number, "url": item.build.url}})  # fmt: skip
        return data

    def _queue(self, request: Request) -> Answer:
        for item in self.queue.values():
            item.hidden_looks -= 1
        waiting = [i for i in self.queue.values() if i.build is None and not i.cancelled and i.hidden_looks < 0]
        return json_answer({"items": [self._item_json(item) for item in waiting]})

    def _queue_item(self, request: Request, number: str) -> Answer:
        item = self.queue.get(int(number))
        if item is None:
            return NOT_FOUND
        if self.cancel_in_queue and item.build is None:
            item.cancelled = True
        if item.build is None and not item.cancelled:
            item.polls_left -= 1
            if item.polls_left <= 0:
                if self.before_start is not None:
                    self.before_start()
                item.build = self.add_build(item.job, item.parameters)
        return json_answer(self._item_json(item))

    def _cancel(self, request: Request) -> Answer:
        item = self.queue.get(int(request.query["id"]))
        if item is not None and item.build is None:
            item.cancelled = True
        return 302, {"Location": request.headers.get("referer", self.url)}, b""

    def _root(self, request: Request) -> Answer:
        return 200, {"Content-Type": "text/html"}, b"<html>Dashboard</html>"

    def _job(self, request: Request, job: str) -> Answer:
        if job not in self.builds and job != self.TEST_JOB and job != "L0_MergeRequest":
            return NOT_FOUND
        assert "tree" in request.query, "the clients ask for the fields they read"
        listed = [b for b in self.builds.get(job, {}).values() if job == self.TEST_JOB or b.number not in self.unlisted]
        builds = sorted(listed, key=lambda b: -b.number)
        return json_answer({"builds": [b.json() for b in builds]})

    def _found(self, job: str, number: str) -> FakeBuild | None:
        return self.builds.get(job, {}).get(int(number))

    def _build(self, request: Request, job: str, number: str) -> Answer:
        build = self._found(job, number)
        if build is None:
            return NOT_FOUND
        self._advance(build)
        return json_answer(build.json())

    def _advance(self, build: FakeBuild) -> None:
        if not build.building or self.hold:
            return
        build.polls += 1
        if build.polls >= build.script.polls_to_end:
            build.building, build.result = False, build.script.result
            for result, cases in build.script.downstream:
                cause = {"upstreamProject": build.job, "upstreamBuild": build.number}
                self.add_build(self.TEST_JOB, {}, building=False, result=result, causes=[cause], cases=cases)

    def _console(self, request: Request, job: str, number: str) -> Answer:
        build = self._found(job, number)
        if build is None:
            return NOT_FOUND
        text = build.console.encode()
        start = int(request.query.get("start", "0"))
        headers = {"Content-Type": "text/plain;charset=UTF-8", "X-Text-Size": str(len(text))}
        if build.building:
            headers["X-More-Data"] = "true"
        return 200, headers, text[start:]

    def _stop(self, request: Request, job: str, number: str) -> Answer:
        build = self._found(job, number)
        if build is None:
            return NOT_FOUND
        if build.building:
            build.building, build.result = False, "ABORTED"
        return 302, {"Location": build.url}, b""

    def _page(self, request: Request, job: str, number: str) -> Answer:
        return (200, {"Content-Type": "text/html"}, b"<html>build</html>") if self._found(job, number) else NOT_FOUND

    def _test_report(self, request: Request, job: str, number: str) -> Answer:
        build = self._found(job, number)
        if build is None or build.cases is None:
            return NOT_FOUND
        return json_answer({"failCount": 0, "passCount": 0, "skipCount": 0, "suites": [{"cases": list(build.cases)}]})

    def _artifact(self, request: Request, job: str, number: str, path: str) -> Answer:
        build = self._found(job, number)
        if build is None or path != "selection.json" or build.script.selection is None:
            return NOT_FOUND
        return json_answer(build.script.selection)

    ROUTES: tuple[tuple[str, str, Callable[..., Answer]], ...] = (
        ("GET", r"/crumbIssuer/api/json", _crumb),
        ("POST", JOB + r"/buildWithParameters", _trigger),
        ("GET", r"/queue/api/json", _queue),
        ("GET", r"/queue/item/(?P<number>\d+)/api/json", _queue_item),
        ("POST", r"/queue/cancelItem", _cancel),
        ("GET", r"/", _root),
        ("GET", JOB + r"/api/json", _job),
        ("GET", JOB + r"/(?P<number>\d+)/api/json", _build),
        ("GET", JOB + r"/(?P<number>\d+)/logText/progressiveText", _console),
        ("POST", JOB + r"/(?P<number>\d+)/stop", _stop),
        ("GET", JOB + r"/(?P<number>\d+)/", _page),
        ("GET", JOB + r"/(?P<number>\d+)/testReport/api/json", _test_report),
        ("GET", JOB + r"/(?P<number>\d+)/artifact/(?P<path>.+)", _artifact),
    )
