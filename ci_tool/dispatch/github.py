"""GitHub through PyGithub: the pull request the bot acts on, its comments and its commit statuses.

Reads, edits and statuses are safe to repeat and are retried (bounded, doubling pauses) on connection
faults, 5xx and 429; a new comment is not (a repeat after a lost answer would post it twice). PyGithub's own
retries are off so that this policy is the only one. 401 and 403 name GITHUB_TOKEN, never its value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import github
import requests
from github import Auth, Github, GithubException

from ci_tool.dispatch.faults import AccessHints, Fault, RetryPolicy, classify, refused_access, retrying
from ci_tool.dispatch.model import STATUS_DESCRIPTION_LIMIT, PullRequest, Status, StatusState
from ci_tool.errors import DispatchError
from ci_tool.layout import GITHUB_API_URL_ENV, GITHUB_TOKEN_ENV, HTTP_TIMEOUT_SECONDS

T = TypeVar("T")


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
        self.api_url = api_url.rstrip("/")
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

    def _call(self, what: str, work: Callable[[], T], *, safe: bool = True) -> T:
        def read_fault(error: Exception) -> Fault | None:
            if isinstance(error, GithubException):
                message = error.data.get("message") if isinstance(error.data, dict) else None
                return Fault(f"HTTP {error.status}" + (f" ({message})" if message else ""), error.status)
            if isinstance(error, requests.RequestException):
                return classify(error, self.timeout_seconds)
            return None

        def judge(fault: Fault, attempt: int) -> None:
            if fault.status in (401, 403, 404) and not (fault.status == 403 and "rate limit" in fault.words):
                raise self._access_error(what, fault)
            if fault.sent and not (safe and fault.retryable_when_sent):
                raise DispatchError(f"{what}: expected GitHub to answer, found {fault.words}")
            if attempt == self.retry.attempts:
                raise DispatchError(
                    f"{what}: expected GitHub to answer at {self.api_url}, found {fault.words} ({attempt} attempts)",
                    hint=f"check {GITHUB_API_URL_ENV} (or --github-api-url) and GitHub's status, then comment again",
                )

        return retrying(work, policy=self.retry, read_fault=read_fault, judge=judge)

    def _access_error(self, what: str, fault: Fault) -> DispatchError:
        hints = AccessHints(
            missing=f"set {GITHUB_TOKEN_ENV} (in Actions: ${{{{ github.token }}}})",
            invalid=f"{GITHUB_TOKEN_ENV} is not a valid token: pass a current one",
            forbidden=f"give {GITHUB_TOKEN_ENV} the pull-requests: write and statuses: write permissions on the "
            "repository",
        )
        return refused_access(what, fault, service="GitHub", accepting=GITHUB_TOKEN_ENV, given=self.has_token,
                              hints=hints)  # fmt: skip

    def _repo(self, repository: str) -> github.Repository.Repository:
        return self.github.get_repo(repository)

    def pull_request(self, repository: str, number: int) -> PullRequest:
        """The pull request's head, base, author, state and labels (its change: pull_change.from_github)."""

        def read() -> PullRequest:
            pull = self._repo(repository).get_pull(number)
            return PullRequest(
                repository=repository,
                number=number,
                head_sha=pull.head.sha,
                base_ref=pull.base.ref,
                author=pull.user.login,
                state=pull.state,
                labels=tuple(label.name for label in pull.labels),
            )

        return self._call(f"read pull request #{number} of {repository}", read)

    def comment(self, repository: str, number: int, body: str) -> int:
        """Post a comment on the pull request; its id (for edits). Not retried once sent."""
        created = self._call(
            f"comment on #{number} of {repository}",
            lambda: self._repo(repository).get_issue(number).create_comment(body),
            safe=False,
        )
        return int(created.id)

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
