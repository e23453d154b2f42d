"""GitHub through PyGithub: the pull request the bot acts on, its comments and its commit statuses.

Reads, edits and statuses are safe to repeat and are retried (bounded, doubling pauses) on connection
faults, 5xx and 429; a new comment is not (a repeat after a lost answer would post it twice). PyGithub's own
retries are off so that this policy is the only one. 401 and 403 name GITHUB_TOKEN, never its value.
A rate limit (403 or 429 with Retry-After or X-RateLimit-Reset) is waited out when it resets within
RATE_LIMIT_WAIT_SECONDS, and otherwise one line saying when it resets.

`claim` is the one atomic step GitHub offers a handler on any machine: the bot's reaction on a comment is
created once (201) and only found (200) by every later request, so exactly one handling of a comment
wins it, whatever the timing (dispatch/trigger.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import requests

from ci_tool.dispatch.answers import AnswerSource, kind
from ci_tool.dispatch.faults import AccessHints, Fault, RetryPolicy, classify, refused_access, retrying
from ci_tool.dispatch.model import STATUS_DESCRIPTION_LIMIT, Commit, IssueState, PullRequest, Status, StatusState
from ci_tool.dispatch.requirements import client_module
from ci_tool.dispatch.urls import shown
from ci_tool.errors import DispatchError
from ci_tool.layout import GITHUB_API_URL_ENV, GITHUB_TOKEN_ENV, HTTP_TIMEOUT_SECONDS, RATE_LIMIT_WAIT_SECONDS

client_module("github", client="Github", distribution="PyGithub")  # one line where it is missing, not a traceback
import github  # noqa: E402
from github import Auth, BadAttributeException, Github, GithubException  # noqa: E402

T = TypeVar("T")
CLAIM_REACTION = "eyes"  # the bot's reaction on a comment it handles: the claim


@dataclass(frozen=True)
class Claim:
    """The bot's reaction on a comment: `won` when this request created it (no other handling did before)."""

    won: bool
    reaction_id: int


def rate_limit_wait(status: int, headers: Mapping[str, Any], *, now: float) -> float | None:
    """Seconds until a rate limit lifts (Retry-After, else X-RateLimit-Reset), None when this is no rate limit."""
    lowered = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    if status not in (403, 429):
        return None
    if lowered.get("retry-after", "").isdigit():
        return float(lowered["retry-after"])
    if lowered.get("x-ratelimit-remaining") == "0" and lowered.get("x-ratelimit-reset", "").isdigit():
        return max(0.0, float(lowered["x-ratelimit-reset"]) - now)
    return 0.0 if status == 429 else None


def utc_text(epoch: float) -> str:
    """A moment as GitHub's users read it in replies and messages: `2026-06-01 12:00:00 UTC`."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class GitHubClient:
    """One GitHub API (github.com's or an Enterprise server's), with the token from the environment."""

    def __init__(
        self,
        api_url: str,
        *,
        token: str | None,
        timeout_seconds: float = HTTP_TIMEOUT_SECONDS,
        retry: RetryPolicy | None = None,
        seconds_between_writes: float | None = None,
    ) -> None:
        self.api_url = shown(api_url).rstrip("/")
        self.timeout_seconds = timeout_seconds
        self.retry = retry or RetryPolicy()
        self.github = Github(
            auth=Auth.Token(token) if token else None,
            base_url=self.api_url,
            timeout=int(max(1, timeout_seconds)),
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=self.retry.first_delay_seconds
            if seconds_between_writes is None
            else seconds_between_writes,
            lazy=True,
        )
        self.has_token = bool(token)
        self.wall: Callable[[], float] = time.time

    def _call(self, what: str, work: Callable[[], T], *, safe: bool = True, forbidden: str | None = None) -> T:
        """`work()` under the fault policy; `forbidden`: the hint of a 403 or 404, where it is not the one of
        replies and statuses (GitHub Actions' calls: dispatch/actions.py)."""
        def read_fault(error: Exception) -> Fault | None:
            if isinstance(error, GithubException):
                message = error.data.get("message") if isinstance(error.data, dict) else None
                words = f"HTTP {error.status}" + (f" ({message})" if message else "")
                wait = rate_limit_wait(error.status, error.headers or {}, now=self.wall())
                return Fault(words, error.status, rate_limit_seconds=wait)
            if isinstance(error, requests.RequestException):
                return classify(error, self.timeout_seconds)
            if isinstance(error, BadAttributeException):  # PyGithub read a field of another type
                expected = _type_words(error.expected_type)
                raise DispatchError(f"{what}: expected {expected} in GitHub's answer at {self.api_url}, found "
                                    f"{kind(error.actual_value)}")  # fmt: skip
            if isinstance(error, ValueError | KeyError | TypeError | AttributeError):  # an answer of another shape
                raise DispatchError(
                    f"{what}: expected GitHub's JSON answer at {self.api_url}, found one that could not be read "
                    f"({type(error).__name__}: {str(error)[:80]})",
                    hint=f"check {GITHUB_API_URL_ENV} (or --github-api-url) points at the GitHub API itself",
                ) from None
            return None

        def judge(fault: Fault, attempt: int) -> None:
            if fault.rate_limit_seconds is not None:
                if fault.rate_limit_seconds > RATE_LIMIT_WAIT_SECONDS or attempt == self.retry.attempts:
                    reset = utc_text(self.wall() + fault.rate_limit_seconds)
                    raise DispatchError(
                        f"{what}: expected GitHub to answer, found {fault.words}: rate limited until {reset}",
                        hint=f"comment again after {reset}",
                    )
                return  # retrying() waits it out
            if fault.status in (401, 403):
                raise self._access_error(what, fault, forbidden)
            if fault.status == 404 and forbidden is not None:  # an Actions call: a missing workflow reads as 404
                raise self._access_error(what, fault, forbidden)
            if fault.status == 404:  # GitHub has no such thing (any more): no question of the token's permissions
                raise DispatchError(
                    f"{what}: expected GitHub to have it, found {fault.words}",
                    hint="it is gone: deleted, or replaced by a force-push; comment again on the pull request",
                )
            if fault.sent and not (safe and fault.retryable_when_sent):
                raise DispatchError(f"{what}: expected GitHub to answer, found {fault.words}")
            if attempt == self.retry.attempts:
                raise DispatchError(
                    f"{what}: expected GitHub to answer at {self.api_url}, found {fault.words} ({attempt} attempts)",
                    hint=f"check {GITHUB_API_URL_ENV} (or --github-api-url) and GitHub's status, then comment again",
                )

        return retrying(work, policy=self.retry, read_fault=read_fault, judge=judge)

    def _access_error(self, what: str, fault: Fault, forbidden: str | None = None) -> DispatchError:
        hints = AccessHints(
            missing=f"set {GITHUB_TOKEN_ENV} (in Actions: ${{{{ github.token }}}})",
            invalid=f"{GITHUB_TOKEN_ENV} is not a valid token: pass a current one",
            forbidden=forbidden
            or f"give {GITHUB_TOKEN_ENV} the pull-requests: write and statuses: write permissions on the repository",
        )
        return refused_access(what, fault, service="GitHub", accepting=GITHUB_TOKEN_ENV, given=self.has_token,
                              hints=hints)  # fmt: skip

    def _repo(self, repository: str) -> github.Repository.Repository:
        return self.github.get_repo(repository)

    def pull_request(self, repository: str, number: int) -> PullRequest:
        """The pull request's head, base, author, state and labels (its change: change/github_read.from_github)."""

        def read() -> PullRequest:
            pull = self._repo(repository).get_pull(number)
            return PullRequest(
                repository=repository,
                number=number,
                head_sha=_text(pull.head.sha, "head.sha"),
                base_ref=pull.base.ref,
                author=pull.user.login,
                state=IssueState(pull.state),
                labels=tuple(label.name for label in pull.labels),
            )

        return self._call(f"read pull request #{number} of {repository}", read)

    def commit(self, repository: str, sha: str) -> Commit:
        """A commit's tree and committer date (the git object's: see pr_bot/carry_out.py on what it proves)."""

        def read() -> Commit:
            found = self._repo(repository).get_commit(sha).commit
            committed = found.committer.date
            return Commit(sha, _text(found.tree.sha, "commit.tree.sha"), committed.timestamp())

        return self._call(f"read commit {sha[:12]} of {repository}", read)

    def received_at(self, repository: str, sha: str) -> float | None:
        """When GitHub received a commit, as far as it tells: the earliest created_at of the commit's check
        suites, which GitHub creates when a push brings the commit (None: it has none, so no sign)."""
        url = f"/repos/{repository}/commits/{sha}/check-suites"

        def read() -> float | None:
            answer = AnswerSource(f"read the check suites of {sha[:12]} in {repository}", self.api_url + url)
            data = answer.obj(self.github.requester.requestJsonAndCheck("GET", url, parameters={"per_page": 100})[1])
            moments = []
            for k, suite in enumerate(answer.items(data, "check_suites")):
                text = answer.text(answer.obj(suite, f"check_suites[{k}]"), "created_at", f"check_suites[{k}]")
                try:
                    moments.append(datetime.fromisoformat(text).timestamp())
                except ValueError:
                    raise answer.error(f"check_suites[{k}].created_at", "an ISO 8601 time", text) from None
            return min(moments, default=None)

        return self._call(f"read the check suites of {sha[:12]} in {repository}", read)

    def claim(self, repository: str, comment_id: int) -> Claim:
        """React to the comment; won when this request created the reaction. Never repeated once sent: a repeat
        would find its own reaction and take it for another handler's."""
        requester = self.github.requester
        url = f"/repos/{repository}/issues/comments/{comment_id}/reactions"

        def post() -> Claim:
            status, headers, output = requester.requestJson("POST", url, input={"content": CLAIM_REACTION})
            data = json.loads(output) if output else {}
            if status >= 400:
                raise requester.createException(status, headers, data)
            return Claim(won=status == 201, reaction_id=int(data["id"]))

        return self._call(f"react to comment {comment_id} on {repository}", post, safe=False)

    def release(self, repository: str, comment_id: int, claim: Claim) -> None:
        """Take the reaction back (the handling started nothing): handling the comment again may trigger."""
        url = f"/repos/{repository}/issues/comments/{comment_id}/reactions/{claim.reaction_id}"
        self._call(
            f"remove the reaction on comment {comment_id} on {repository}",
            lambda: self.github.requester.requestJsonAndCheck("DELETE", url),
        )

    def comment(self, repository: str, number: int, body: str) -> int:
        """Post a comment on the pull request; its id (for edits). Not retried once sent."""
        created = self._call(
            f"comment on #{number} of {repository}",
            lambda: self._repo(repository).get_issue(number).create_comment(body),
            safe=False,
        )
        return int(created.id)

    def find_comment(self, repository: str, number: int, marker: str) -> int | None:
        """The newest comment on the pull request whose body holds `marker` (the bot's earlier reply), or None."""

        def read() -> int | None:
            found = [c for c in self._repo(repository).get_issue(number).get_comments() if marker in (c.body or "")]
            return int(found[-1].id) if found else None

        return self._call(f"read the comments on #{number} of {repository}", read)

    def edit_comment(self, repository: str, number: int, comment_id: int, body: str) -> None:
        self._call(
            f"edit comment {comment_id} on #{number} of {repository}",
            lambda: self._repo(repository).get_issue(number).get_comment(comment_id).edit(body),
        )

    def set_status(self, repository: str, sha: str, status: Status) -> None:
        description = status.description[:STATUS_DESCRIPTION_LIMIT]
        self._call(
            f"set the status {status.context!r} of {sha[:12]} in {repository}",
            lambda: self._repo(repository)
            .get_commit(sha)
            .create_status(
                state=status.state.value,
                target_url=status.target_url or github.GithubObject.NotSet,
                description=description,
                context=status.context,
            ),
        )

    def statuses(self, repository: str, sha: str) -> dict[str, Status]:
        """The latest status of each context on a commit."""

        def read() -> dict[str, Status]:
            combined = self._repo(repository).get_commit(sha).get_combined_status()
            return {
                found.context: Status(
                    found.context, StatusState(found.state), found.description or "", found.target_url or ""
                )
                for found in combined.statuses
            }

        return self._call(f"read the statuses of {sha[:12]} in {repository}", read)


_TYPE_WORDS = {str: "a string", int: "a whole number", float: "a number", bool: "true or false", dict: "an object",
               list: "a list"}  # fmt: skip


def _type_words(expected: object) -> str:
    """PyGithub's expected type (a type, or a tuple, list or dict of them) in words: `a string`."""
    found = expected if isinstance(expected, tuple | list) else (expected,)
    words = [_TYPE_WORDS.get(one, getattr(one, "__name__", str(one))) for one in found]  # type: ignore[call-overload]
    return " or ".join(dict.fromkeys(words))


def _text(value: object, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a string at {path}, found {value!r}")
    return value
