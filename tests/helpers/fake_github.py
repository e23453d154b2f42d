"""A loopback GitHub speaking the subset of its REST API that PyGithub calls for the bot.

    GET  repos/O/R/pulls/N, .../pulls/N/files   the pull request and its changed files (paged, with
                                                status and a rename's previous_filename)
    GET  repos/O/R/compare/BASE...HEAD          the merge base of two commits (`compares`)
    GET  repos/O/R/contents/PATH?ref=SHA        a file's text at a commit, base64 (`contents`; over
                                                `contents_limit_bytes` without it, as GitHub's 1 MB)
    GET  repos/O/R/git/blobs/SHA                a blob contents/ named, base64
    POST repos/O/R/issues/N/comments            a comment; PATCH repos/O/R/issues/comments/C edits it
                                                (422 for a body over GitHub's 65,536 characters)
    GET  repos/O/R/issues/N/comments            the comments, oldest (lowest id) first (paged)
    POST repos/O/R/statuses/SHA                 a commit status
    GET  repos/O/R/commits/SHA/status           the latest status per context
    GET  repos/O/R/commits/SHA                  the commit's tree and committer date
    GET  repos/O/R/commits/SHA/check-suites     its check suites (created when GitHub received the push)
    POST repos/O/R/issues/comments/C/reactions  201 the first time, 200 (the same reaction) after
    DELETE .../comments/C/reactions/ID          the reaction taken back
    GET  repos/O/R, .../actions/...             GitHub Actions: dispatches, runs, cancel, artifacts
                                                (fake_actions.py, its backend `actions.backend`)
    (labels and reviews)                        fake_github_labels.py

Lists page as GitHub's REST API does (per_page, page, a Link header): fake_github_pages.py.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from tests.helpers.fake_actions import FakeActions
from tests.helpers.fake_github_labels import LABEL_ROUTES
from tests.helpers.fake_github_pages import paged
from tests.helpers.loopback import Answer, Loopback, Request, json_answer


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
    reviews: list[tuple[str, str]] = field(default_factory=list)  # (login, state), oldest first: fake_github_labels


def _file_row(found: str | dict[str, str]) -> dict[str, str]:
    return {"filename": found, "status": "modified"} if isinstance(found, str) else found


COMMENT_LIMIT = 65_536  # characters GitHub takes in a comment's body


def _too_long() -> Answer:
    error = {"resource": "IssueComment", "code": "custom", "field": "body",
             "message": f"body is too long (maximum is {COMMENT_LIMIT} characters)"}  # fmt: skip
    return json_answer({"message": "Validation Failed", "errors": [error]}, 422)


EARLY = "2026-01-01T00:00:00Z"  # the committer date of a commit the test does not set: before any comment


@dataclass
class FakeCommit:
    tree: str
    committed_at: str = EARLY
    suites_created_at: list[str] = field(default_factory=list)  # its check suites' created_at (GitHub: on push)


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
        self.actions = FakeActions(self)
        self.label_events: list[tuple[str, str]] = []  # ("added" or "removed", label), in order

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
        if request.path.startswith("/_blobs/artifacts/"):  # a signed URL: no token
            return self.actions.blob(request, request.path.rsplit("/", 1)[-1])
        if request.headers.get("authorization") not in (f"token {self.token}", f"Bearer {self.token}"):
            return json_answer({"message": "Bad credentials"}, 401)
        return self.route(request, json_answer({"message": "Not Found"}, 404))

    def _pull(self, request: Request, repo: str, number: str) -> Answer:
        pull = self.pulls.get((repo, int(number)))
        if pull is None:
            return json_answer({"message": "Not Found"}, 404)
        base = f"{self.api_url}/repos/{repo}"
        changed = len(pull.files) if pull.changed_files is None else pull.changed_files
        return json_answer({
            "url": f"{base}/pulls/{number}", "issue_url": f"{base}/issues/{number}", "number": pull.number,
            "state": pull.state, "head": {"sha": pull.head_sha, "ref": "feature"},
            "base": {"ref": pull.base_ref, "sha": pull.base_sha}, "changed_files": changed,
            "user": {"login": pull.author}, "labels": [{"name": name} for name in pull.labels],
        })  # fmt: skip

    def _files(self, request: Request, repo: str, number: str) -> Answer:
        pull = self.pulls[(repo, int(number))]
        return paged(request, [_file_row(found) for found in pull.files], self.api_url + request.path)

    def _compare(self, request: Request, repo: str, base: str, head: str) -> Answer:
        merge_base = self.compares.get((repo, base, head), base)  # unless told: branched off the base's tip
        return json_answer({"merge_base_commit": {"sha": merge_base}, "base_commit": {"sha": base}, "files": []})

    def _content(self, request: Request, repo: str, path: str) -> Answer:
        path = unquote(path)  # PyGithub quotes the path
        found = self.contents.get((repo, request.query.get("ref", ""), path))
        if found is None:
            return json_answer({"message": "Not Found"}, 404)
        sha = hashlib.sha1(b"blob %d\0" % len(found) + found).hexdigest()
        self.blobs[sha] = found
        large = len(found) > self.contents_limit_bytes
        return json_answer({"type": "file", "name": path.rsplit("/", 1)[-1], "path": path, "size": len(found),
                            "sha": sha, "encoding": "none" if large else "base64",
                            "content": "" if large else base64.b64encode(found).decode()})  # fmt: skip

    def _blob(self, request: Request, repo: str, sha: str) -> Answer:
        found = self.blobs.get(sha)
        if found is None:
            return json_answer({"message": "Not Found"}, 404)
        content = base64.b64encode(found).decode()
        return json_answer({"sha": sha, "size": len(found), "encoding": "base64", "content": content})

    def _comment(self, request: Request, repo: str, number: str) -> Answer:
        body = json.loads(request.body)["body"]
        if len(body) > COMMENT_LIMIT:
            return _too_long()
        return json_answer(self.add_comment(repo, int(number), body), 201)

    def add_comment(self, repository: str, number: int, body: str) -> dict[str, object]:
        """A comment on the pull request, as if someone posted it (the next id: GitHub lists them by id)."""
        comment_id = self.next_comment_id
        self.next_comment_id += 1
        url = f"{self.api_url}/repos/{repository}/issues/comments/{comment_id}"
        self.comments[comment_id] = {"id": comment_id, "body": body, "url": url, "issue": number}
        return self.comments[comment_id]

    def _comments(self, request: Request, repo: str, number: str) -> Answer:
        found = [comment for _, comment in sorted(self.comments.items()) if comment["issue"] == int(number)]
        return paged(request, found, self.api_url + request.path)

    def _edit(self, request: Request, repo: str, comment_id: str) -> Answer:
        comment = self.comments.get(int(comment_id))
        if comment is None:
            return json_answer({"message": "Not Found"}, 404)
        body = json.loads(request.body)["body"]
        if len(body) > COMMENT_LIMIT:
            return _too_long()
        comment["body"] = body
        return json_answer(comment)

    def _status(self, request: Request, repo: str, sha: str) -> Answer:
        status = {**json.loads(request.body), "sha": sha}
        assert len(str(status.get("description", ""))) <= 140, "GitHub refuses longer descriptions"
        self.statuses.append(status)
        return json_answer({"id": len(self.statuses), **status}, 201)

    def _commit(self, request: Request, repo: str, sha: str) -> Answer:
        commit = self.commit(sha)
        person = {"name": "A", "email": "a@example.com", "date": commit.committed_at}
        return json_answer({"sha": sha, "url": f"{self.api_url}/repos/{repo}/commits/{sha}",
                      "commit": {"tree": {"sha": commit.tree}, "committer": person, "author": person}})  # fmt: skip

    def _suites(self, request: Request, repo: str, sha: str) -> Answer:
        created = self.commit(sha).suites_created_at
        suites = [{"id": 700 + k, "head_sha": sha, "created_at": at} for k, at in enumerate(created)]
        return json_answer({"total_count": len(suites), "check_suites": suites})

    def _react(self, request: Request, repo: str, comment_id: str) -> Answer:
        key = (int(comment_id), json.loads(request.body)["content"])
        created = key not in self.reactions
        if created:
            self.reactions[key] = 9000 + len(self.reactions)
        return json_answer({"id": self.reactions[key], "content": key[1]}, 201 if created else 200)

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
        return json_answer({"state": "pending", "sha": sha, "statuses": list(latest.values())})

    def _repo(self, request: Request, repo: str) -> Answer:
        return self.actions.repo(request, repo)

    def _dispatch(self, request: Request, repo: str, workflow: str) -> Answer:
        return self.actions.dispatch(request, repo, workflow)

    def _runs(self, request: Request, repo: str, workflow: str) -> Answer:
        return self.actions.list_runs(request, repo, workflow)

    def _run(self, request: Request, repo: str, run_id: str) -> Answer:
        return self.actions.get_run(request, repo, run_id)

    def _cancel(self, request: Request, repo: str, run_id: str) -> Answer:
        return self.actions.cancel(request, repo, run_id)

    def _artifacts(self, request: Request, repo: str, run_id: str) -> Answer:
        return self.actions.artifacts(request, repo, run_id)

    def _download(self, request: Request, repo: str, artifact_id: str) -> Answer:
        return self.actions.download(request, repo, artifact_id)

    ROUTES: tuple[tuple[str, str, Callable[..., Answer]], ...] = (
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)", _repo),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<workflow>[^/]+)/dispatches", _dispatch),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/workflows/(?P<workflow>[^/]+)/runs", _runs),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<run_id>\d+)", _run),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<run_id>\d+)/cancel", _cancel),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/runs/(?P<run_id>\d+)/artifacts", _artifacts),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/actions/artifacts/(?P<artifact_id>\d+)/zip", _download),
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
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[0-9a-f]+)/check-suites", _suites),
        ("GET", r"/repos/(?P<repo>[^/]+/[^/]+)/commits/(?P<sha>[0-9a-f]+)", _commit),
        ("POST", r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<comment_id>\d+)/reactions", _react),
        (
            "DELETE",
            r"/repos/(?P<repo>[^/]+/[^/]+)/issues/comments/(?P<comment_id>\d+)/reactions/(?P<reaction_id>\d+)",
            _unreact,
        ),
    )
    ROUTES += LABEL_ROUTES  # labels and reviews: fake_github_labels.py
