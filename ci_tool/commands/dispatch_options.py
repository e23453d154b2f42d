"""The options of `ci-tool bot handle` that reach Jenkins and GitHub, each with its environment variable,
read into one DispatchSettings. Credentials come only from the environment (JENKINS_USER,
JENKINS_API_TOKEN, GITHUB_TOKEN): no flag takes them, and no message shows them."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ci_tool.bot.engines import BOT_ENGINES, DEFAULT_BOT_ENGINES, parse_bot_engines
from ci_tool.commands.history_options import HISTORY
from ci_tool.commands.number_types import FiniteFloatRange
from ci_tool.errors import BotError, DispatchError, ReportError
from ci_tool.history.store import HistoryStore, history_path
from ci_tool.layout import (
    BOT_ENGINES_ENV,
    DISPATCH_POLL_SECONDS,
    DISPATCH_RETRY_SECONDS,
    GITHUB_API_URL,
    GITHUB_API_URL_ENV,
    GITHUB_TOKEN_ENV,
    JENKINS_JOB_ENV,
    JENKINS_TOKEN_ENV,
    JENKINS_URL_ENV,
    JENKINS_USER_ENV,
    LOST_ANSWER_GRACE_SECONDS,
    MERGE_REQUEST_JOB,
    QUEUE_TIMEOUT_SECONDS,
    REPORT_URL_ENV,
    TRIGGER_TIMEOUT_SECONDS,
)
from ci_tool.report.links import PLACEHOLDERS, ReportUrl, parse_report_url
from ci_tool.stages.engines import Engine

if TYPE_CHECKING:  # the clients import requests, python-jenkins and PyGithub (half a second): only to dispatch
    from ci_tool.dispatch.faults import RetryPolicy
    from ci_tool.dispatch.github import GitHubClient
    from ci_tool.dispatch.jenkins import JenkinsClient
    from ci_tool.dispatch.trigger import Pace

F = TypeVar("F", bound=Callable[..., object])


@dataclass(frozen=True)
class DispatchSettings:
    jenkins_url: str | None
    jenkins_job: str
    github_api_url: str
    wait: bool
    history_option: Path | None
    poll_seconds: float
    retry_seconds: float
    queue_timeout_seconds: float
    report_url: ReportUrl | None
    lost_answer_seconds: float
    engines: tuple[Engine, ...] = DEFAULT_BOT_ENGINES  # where /bot run, kill and reuse-pipeline act

    def retry(self) -> RetryPolicy:
        from ci_tool.dispatch.faults import RetryPolicy

        return RetryPolicy(first_delay_seconds=self.retry_seconds)

    def jenkins(self) -> JenkinsClient:
        if not self.jenkins_url:
            raise DispatchError(
                f"expected the Jenkins URL in --jenkins-url or {JENKINS_URL_ENV}, found neither",
                hint="set it (the bot workflow passes a repository variable), or pass --dry-run",
            )
        from ci_tool.dispatch.jenkins import JenkinsClient

        return JenkinsClient(
            self.jenkins_url,
            user=os.environ.get(JENKINS_USER_ENV),
            token=os.environ.get(JENKINS_TOKEN_ENV),
            retry=self.retry(),
        )

    def github(self) -> GitHubClient:
        token = os.environ.get(GITHUB_TOKEN_ENV)
        if not token:
            raise DispatchError(
                f"expected a GitHub token in {GITHUB_TOKEN_ENV} to reply on the pull request, found none",
                hint="in Actions pass `GITHUB_TOKEN: ${{ github.token }}`, or pass --dry-run",
            )
        from ci_tool.dispatch.github import GitHubClient

        return GitHubClient(self.github_api_url, token=token, retry=self.retry())

    def pace(self) -> Pace:
        from ci_tool.dispatch.trigger import Pace

        return Pace(
            poll_seconds=self.poll_seconds,
            queue_timeout_seconds=self.queue_timeout_seconds,
            lost_answer_grace_seconds=self.lost_answer_seconds,
            claim_wait_seconds=TRIGGER_TIMEOUT_SECONDS + self.lost_answer_seconds,
        )

    def history(self) -> HistoryStore:
        return HistoryStore(history_path(self.history_option))


def _seconds(name: str, default: float, maximum: float, help: str) -> Callable[[F], F]:
    """A finite number of seconds from 0 to `maximum`."""
    return click.option(name, type=FiniteFloatRange(min=0, max=maximum), default=default, show_default=True, help=help)


def _report_url(ctx: click.Context, param: click.Parameter, value: str | None) -> ReportUrl | None:
    if not value:
        return None
    try:
        return parse_report_url(value, where=f"--report-url (or {REPORT_URL_ENV})")
    except ReportError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None


def _engines(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[Engine, ...]:
    try:
        return parse_bot_engines(value or "", where=f"--engines (or {BOT_ENGINES_ENV})")
    except BotError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None


_DISPATCH_OPTIONS = (
    click.option(
        "--engines",
        envvar=BOT_ENGINES_ENV,
        show_envvar=True,
        callback=_engines,
        help="Where /bot run, kill and reuse-pipeline act: "
        + ", ".join(BOT_ENGINES)
        + " (GitHub Actions: the generated l0-test.yml), or both comma-separated [default: jenkins].",
    ),
    click.option("--jenkins-url", envvar=JENKINS_URL_ENV, show_envvar=True, help="The Jenkins the bot triggers."),
    click.option(
        "--jenkins-job",
        envvar=JENKINS_JOB_ENV,
        show_envvar=True,
        default=MERGE_REQUEST_JOB,
        show_default=True,
        help="The job a /bot run triggers (a folder job as folder/name).",
    ),
    click.option(
        "--github-api-url",
        envvar=GITHUB_API_URL_ENV,
        show_envvar=True,
        default=GITHUB_API_URL,
        show_default=True,
        help=f"The GitHub API (Enterprise: https://HOST/api/v3); the token comes from {GITHUB_TOKEN_ENV}.",
    ),
    click.option("--wait", is_flag=True, help="Follow the build to its end, then post the CI report and status."),
    click.option(
        "--history",
        "history_option",
        type=HISTORY,
        help="The history holding the dispatch ledger [default: $CI_TOOL_HISTORY, else .ci-tool/history.sqlite].",
    ),
    _seconds("--poll-seconds", DISPATCH_POLL_SECONDS, 3600, "Between looks at a queue item or a running build."),
    _seconds(
        "--retry-seconds",
        DISPATCH_RETRY_SECONDS,
        600,
        "The first pause before a retry (doubling), and between GitHub writes.",
    ),
    click.option(
        "--report-url",
        envvar=REPORT_URL_ENV,
        show_envvar=True,
        callback=_report_url,
        help="Where each build's HTML report is published, linked from the final CI report: a URL with "
        + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
        + ".",
    ),
    _seconds(
        "--queue-timeout-seconds",
        QUEUE_TIMEOUT_SECONDS,
        7 * 24 * 3600,
        "How long a queued build may wait for Jenkins to name its build number.",
    ),
    _seconds(
        "--lost-answer-seconds",
        LOST_ANSWER_GRACE_SECONDS,
        3600,
        "After a trigger whose answer was lost: how long to look for its build in Jenkins before triggering again.",
    ),
)


def dispatch_options(command: F) -> F:
    """Add the Jenkins, GitHub, --wait and pacing options (read into the keyword argument `settings`)."""

    @functools.wraps(command)
    def with_settings(*args: Any, **kwargs: Any) -> object:
        names = DispatchSettings.__dataclass_fields__
        settings = DispatchSettings(**{name: kwargs.pop(name) for name in list(kwargs) if name in names})
        return command(*args, settings=settings, **kwargs)

    wrapped: F = with_settings  # type: ignore[assignment]  # same signature to click
    for decorator in reversed(_DISPATCH_OPTIONS):
        wrapped = decorator(wrapped)
    return wrapped
