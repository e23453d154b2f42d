"""Loopback Jenkins and GitHub servers speaking the subset of their REST APIs that python-jenkins and PyGithub
call for the bot, with faults injected per request.

    Jenkins  GET  crumbIssuer/api/json                   the CSRF crumb (expire_crumb() makes a new one)
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
    GitHub   GET  repos/O/R/pulls/N, .../pulls/N/files   the pull request and its changed files (paged, with
                                                         status and a rename's previous_filename)
             GET  repos/O/R/compare/BASE...HEAD          the merge base of two commits (`compares`)
             GET  repos/O/R/contents/PATH?ref=SHA        a file's text at a commit, base64 (`contents`; over
                                                         `contents_limit_bytes` without it, as GitHub's 1 MB)
             GET  repos/O/R/git/blobs/SHA                a blob contents/ named, base64
             POST repos/O/R/issues/N/comments            a comment; PATCH repos/O/R/issues/comments/C edits it
             GET  repos/O/R/issues/N/comments            the comments (one page)
             POST repos/O/R/statuses/SHA                 a commit status
             GET  repos/O/R/commits/SHA/status           the latest status per context
             GET  repos/O/R/commits/SHA                  the commit's tree and committer date
             POST repos/O/R/issues/comments/C/reactions  201 the first time, 200 (the same reaction) after
             DELETE .../comments/C/reactions/ID          the reaction taken back

A queue item names its build after `polls_to_start` looks; a build ends after `polls_to_end` looks at it,
as its Script says (result, console lines, the L0_Test builds it starts with their test cases). Nothing waits
on the clock: the client's polls move the fakes on.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

Answer = tuple[int, dict[str, str], bytes]


@dataclass
class Fault:
    """Answer matching requests with `status` (or drop the connection, before or after the fake acted)."""

    method: str
    path: str  # a regex searched in the path
    status: int | None = None
    body: str = ""
    drop: bool = False  # close the connection without an answer
    after: bool = False  # drop or answer `status` only after the fake acted on the request
    hang: bool = False  # answer only when the test ends (a timeout)
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)  # with status 200 and a body: an answer of another shape
    slow_seconds: float = 0.0  # with after: the answer (the fake's own, when no status) leaves this much later


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


class Loopback:
    """A threaded HTTP server on 127.0.0.1 and a free port, routing to `answer`; faults and a request log."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self.requests: list[Request] = []
        self.lock = threading.RLock()
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = -1  # headers and body leave in one write (else delayed ACKs add 40 ms an answer)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    self.command,
                    parts.path,
                    {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()},
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                answer = owner.handle(request)
                if answer is None:
                    self.close_connection = True
                    return
                status, headers, body = answer
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def fail(self, method: str, path: str, **how: Any) -> Fault:
        fault = Fault(method, path, **how)
        self.faults.append(fault)
        return fault

    def _fault_for(self, request: Request) -> Fault | None:
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and re.search(fault.path, request.path):
                fault.times -= 1
                return fault
        return None

    def before(self, request: Request) -> None:
        """Called outside the lock before a request is answered (a barrier that lines up concurrent handlers)."""

    def handle(self, request: Request) -> Answer | None:
        self.before(request)
        with self.lock:
            self.requests.append(request)
            fault = self._fault_for(request)
            if fault is not None and fault.hang:
                pass
            elif fault is not None and not fault.after:
                return None if fault.drop else (fault.status or 500, fault.headers, fault.body.encode())
            else:
                answer = self.answer(request)
                if fault is not None and fault.slow_seconds:
                    pass  # answered below, outside the lock
                elif fault is not None:
                    return None if fault.drop else (fault.status or 500, fault.headers, fault.body.encode())
                else:
                    return answer
        if fault is not None and fault.slow_seconds:
            self.release.wait(fault.slow_seconds)
            return answer
        self.release.wait(60)  # a hung answer: the client times out first
        return None

    def answer(self, request: Request) -> Answer:
        raise NotImplementedError

    def route(self, request: Request, not_found: Answer) -> Answer:
        """The answer of the ROUTES entry (method, path regex, handler) that matches the request."""
        for method, pattern, handler in getattr(self, "ROUTES", ()):
            match = re.fullmatch(pattern, request.path)
            if match and method == request.method:
                return handler(self, request, **match.groupdict())  # type: ignore[no-any-return]
        return not_found

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r.method == method and re.search(path, r.path))


def _json(value: object, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(value).encode()


NOT_FOUND: Answer = (404, {"Content-Type": "text/html"}, b"<html>Not Found</html>")


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
        build = FakeBuild(job, number, parameters, script or self.script, f"{self.url}job/{job}/{number}/", **state)
        builds[number] = build
        return build

    def triggered(self, job: str = "L0_MergeRequest") -> list[FakeBuild]:
        return list(self.builds.get(job, {}).values())

    # -- routing -------------------------------------------------------------------------------

    def answer(self, request: Request) -> Answer:
        expected = "Basic " + base64.b64encode(f"{self.user}:{self.token}".encode()).decode()
        if request.headers.get("authorization") != expected:
            return 401, {"WWW-Authenticate": 'Basic realm="Jenkins"'}, b"<html>Unauthorized</html>"
        if request.method == "POST" and request.headers.get("jenkins-crumb") != self.crumb:
            return 403, {"Content-Type": "text/html"}, b"<html>No valid crumb was included in the request</html>"
        return self.route(request, NOT_FOUND)

    def _crumb(self, request: Request) -> Answer:
        return _json({"crumb": self.crumb, "crumbRequestField": "Jenkins-Crumb"})

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
            "task": {"name": item.job, "url": f"{self.url}job/{item.job}/"},
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
        return _json({"items": [self._item_json(item) for item in waiting]})

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
        return _json(self._item_json(item))

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
        return _json({"builds": [b.json() for b in builds]})

    def _found(self, job: str, number: str) -> FakeBuild | None:
        return self.builds.get(job, {}).get(int(number))

    def _build(self, request: Request, job: str, number: str) -> Answer:
        build = self._found(job, number)
        if build is None:
            return NOT_FOUND
        self._advance(build)
        return _json(build.json())

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
        return _json({"failCount": 0, "passCount": 0, "skipCount": 0, "suites": [{"cases": list(build.cases)}]})

    def _artifact(self, request: Request, job: str, number: str, path: str) -> Answer:
        build = self._found(job, number)
        if build is None or path != "selection.json" or build.script.selection is None:
            return NOT_FOUND
        return _json(build.script.selection)

    ROUTES: tuple[tuple[str, str, Callable[..., Answer]], ...] = (
        ("GET", r"/crumbIssuer/api/json", _crumb),
        ("POST", r"/job/(?P<job>[^/]+)/buildWithParameters", _trigger),
        ("GET", r"/queue/api/json", _queue),
        ("GET", r"/queue/item/(?P<number>\d+)/api/json", _queue_item),
        ("POST", r"/queue/cancelItem", _cancel),
        ("GET", r"/", _root),
        ("GET", r"/job/(?P<job>[^/]+)/api/json", _job),
        ("GET", r"/job/(?P<job>[^/]+)/(?P<number>\d+)/api/json", _build),
        ("GET", r"/job/(?P<job>[^/]+)/(?P<number>\d+)/logText/progressiveText", _console),
        ("POST", r"/job/(?P<job>[^/]+)/(?P<number>\d+)/stop", _stop),
        ("GET", r"/job/(?P<job>[^/]+)/(?P<number>\d+)/", _page),
        ("GET", r"/job/(?P<job>[^/]+)/(?P<number>\d+)/testReport/api/json", _test_report),
        ("GET", r"/job/(?P<job>[^/]+)/(?P<number>\d+)/artifact/(?P<path>.+)", _artifact),
    )


@dataclass
class FakePull:
    number: int
    head_sha: str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
    base_ref: str = "main"
    author: str = "pr-author"
    state: str = "open"
    labels: list[str] = field(default_factory=list)
    files: list[str | dict[str, str]] = field(default_factory=list)  # a name (modified) or a pulls/N/files row
    base_sha: str = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"  # the base branch's tip
    changed_files: int | None = None  # what pulls/N says it changes (None: len(files)); more: a cut-short list


def _file_row(found: str | dict[str, str]) -> dict[str, str]:
    return {"filename": found, "status": "modified"} if isinstance(found, str) else found


EARLY = "2026-01-01T00:00:00Z"  # the committer date of a commit the test does not set: before any comment


@dataclass
class FakeCommit:
    tree: str
    committed_at: str = EARLY


class FakeGitHub(Loopback):
    def __init__(self, *, token: str = "ghs_fake") -> None:
        super().__init__()
        self.token = token
        self.pulls: dict[tuple[str, int], FakePull] = {}
        self.comments: dict[int, dict[str, object]] = {}
        self.statuses: list[dict[str, object]] = []  # oldest first
        self.next_comment_id = 5000
        self.commits: dict[str, FakeCommit] = {}  # others: their own tree (the sha reversed), committed EARLY
        self.reactions: dict[tuple[int, str], int] = {}  # (comment id, content) -> reaction id
        self.claim_barrier: threading.Barrier | None = None  # reactions wait here until all parties arrived
        self.compares: dict[tuple[str, str, str], str] = {}  # (repository, base, head) -> their merge base
        self.contents: dict[tuple[str, str, str], bytes] = {}  # (repository, sha, path) -> the file's bytes
        self.contents_limit_bytes = 1024 * 1024  # larger files: contents/ answers without them, as GitHub does
        self.blobs: dict[str, bytes] = {}  # blob sha -> bytes, for git/blobs/SHA

    def before(self, request: Request) -> None:
        if self.claim_barrier is not None and request.method == "POST" and request.path.endswith("/reactions"):
            with contextlib.suppress(threading.BrokenBarrierError):
                self.claim_barrier.wait(timeout=60)

    def commit(self, sha: str) -> FakeCommit:
        return self.commits.get(sha) or FakeCommit(sha[::-1])

    @property
    def api_url(self) -> str:
        return self.url.rstrip("/")

    def add_pull(self, repository: str, pull: FakePull) -> FakePull:
        self.pulls[(repository, pull.number)] = pull
        return pull

    def bodies(self) -> list[str]:
        return [str(c["body"]) for c in self.comments.values()]

    def status_of(self, sha: str, context: str) -> dict[str, object] | None:
        found = [s for s in self.statuses if s["sha"] == sha and s["context"] == context]
        return found[-1] if found else None

    def answer(self, request: Request) -> Answer:
        if request.headers.get("authorization") not in (f"token {self.token}", f"Bearer {self.token}"):
            return _json({"message": "Bad credentials"}, 401)
        return self.route(request, _json({"message": "Not Found"}, 404))

    def _pull(self, request: Request, repo: str, number: str) -> Answer:
        pull = self.pulls.get((repo, int(number)))
        if pull is None:
            return _json({"message": "Not Found"}, 404)
        base = f"{self.api_url}/repos/{repo}"
        changed = len(pull.files) if pull.changed_files is None else pull.changed_files
        return _json({
            "url": f"{base}/pulls/{number}", "issue_url": f"{base}/issues/{number}", "number": pull.number,
            "state": pull.state, "head": {"sha": pull.head_sha, "ref": "feature"},
            "base": {"ref": pull.base_ref, "sha": pull.base_sha}, "changed_files": changed,
            "user": {"login": pull.author}, "labels": [{"name": name} for name in pull.labels],
        })  # fmt: skip

    def _files(self, request: Request, repo: str, number: str) -> Answer:
        pull = self.pulls[(repo, int(number))]
        per_page, page = int(request.query.get("per_page", "30")), int(request.query.get("page", "1"))
        chunk = pull.files[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(pull.files):
            link = f"{self.api_url}/repos/{repo}/pulls/{number}/files?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{link}>; rel="next"'
        return _json([_file_row(found) for found in chunk], headers=headers)

    def _compare(self, request: Request, repo: str, base: str, head: str) -> Answer:
        merge_base = self.compares.get((repo, base, head), base)  # unless told: branched off the base's tip
        return _json({"merge_base_commit": {"sha": merge_base}, "base_commit": {"sha": base}, "files": []})

    def _content(self, request: Request, repo: str, path: str) -> Answer:
        path = unquote(path)  # PyGithub quotes the path
        found = self.contents.get((repo, request.query.get("ref", ""), path))
        if found is None:
            return _json({"message": "Not Found"}, 404)
        sha = hashlib.sha1(b"blob %d\0" % len(found) + found).hexdigest()
        self.blobs[sha] = found
        large = len(found) > self.contents_limit_bytes
        return _json({"type": "file", "name": path.rsplit("/", 1)[-1], "path": path, "size": len(found), "sha": sha,
                      "encoding": "none" if large else "base64",
                      "content": "" if large else base64.b64encode(found).decode()})  # fmt: skip

    def _blob(self, request: Request, repo: str, sha: str) -> Answer:
        found = self.blobs.get(sha)
        if found is None:
            return _json({"message": "Not Found"}, 404)
        content = base64.b64encode(found).decode()
        return _json({"sha": sha, "size": len(found), "encoding": "base64", "content": content})

    def _comment(self, request: Request, repo: str, number: str) -> Answer:
        comment_id = self.next_comment_id
        self.next_comment_id += 1
        body = json.loads(request.body)["body"]
        url = f"{self.api_url}/repos/{repo}/issues/comments/{comment_id}"
        self.comments[comment_id] = {"id": comment_id, "body": body, "url": url, "issue": int(number)}
        return _json(self.comments[comment_id], 201)

    def _comments(self, request: Request, repo: str, number: str) -> Answer:
        return _json([c for c in self.comments.values() if c["issue"] == int(number)])

    def _edit(self, request: Request, repo: str, comment_id: str) -> Answer:
        comment = self.comments.get(int(comment_id))
        if comment is None:
            return _json({"message": "Not Found"}, 404)
        comment["body"] = json.loads(request.body)["body"]
        return _json(comment)

    def _status(self, request: Request, repo: str, sha: str) -> Answer:
        status = {**json.loads(request.body), "sha": sha}
        assert len(str(status.get("description", ""))) <= 140, "GitHub refuses longer descriptions"
        self.statuses.append(status)
        return _json({"id": len(self.statuses), **status}, 201)

    def _commit(self, request: Request, repo: str, sha: str) -> Answer:
        commit = self.commit(sha)
        person = {"name": "A", "email": "a@example.com", "date": commit.committed_at}
        return _json({"sha": sha, "url": f"{self.api_url}/repos/{repo}/commits/{sha}",
                      "commit": {"tree": {"sha": commit.tree}, "committer": person, "author": person}})  # fmt: skip

    def _react(self, request: Request, repo: str, comment_id: str) -> Answer:
        key = (int(comment_id), json.loads(request.body)["content"])
        created = key not in self.reactions
        if created:
            self.reactions[key] = 9000 + len(self.reactions)
        return _json({"id": self.reactions[key], "content": key[1]}, 201 if created else 200)

    def _unreact(self, request: Request, repo: str, comment_id: str, reaction_id: str) -> Answer:
        for key, found in list(self.reactions.items()):
            if key[0] == int(comment_id) and found == int(reaction_id):
                del self.reactions[key]
        return 204, {}, b""

    def _combined(self, request: Request, repo: str, sha: str) -> Answer:
        latest: dict[str, dict[str, object]] = {}
        for status in self.statuses:
            if status["sha"] == sha:
                latest[str(status["context"])] = status
        return _json({"state": "pending", "sha": sha, "statuses": list(latest.values())})

    ROUTES: tuple[tuple[str, str, Callable[..., Answer]], ...] = (
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<number>\d+)", _pull),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/(?P<number>\d+)/files", _files),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/compare/(?P<base>[0-9a-f]+)\.\.\.(?P<head>[0-9a-f]+)", _compare),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/contents/(?P<path>.+)", _content),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/git/blobs/(?P<sha>[0-9a-f]+)", _blob),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<number>\d+)/comments", _comment),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<number>\d+)/comments", _comments),
        ("PATCH", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<comment_id>\d+)", _edit),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/statuses/(?P<sha>[0-9a-f]+)", _status),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[0-9a-f]+)/status", _combined),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[0-9a-f]+)", _commit),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<comment_id>\d+)/reactions", _react),
        (
            "DELETE",
            r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<comment_id>\d+)/reactions/(?P<reaction_id>\d+)",
            _unreact,
        ),
    )


def serve(fake: Loopback) -> Iterator[Loopback]:
    try:
        yield fake
    finally:
        fake.close()
