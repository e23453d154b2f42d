"""The second step of answering a comment: the clients its decision needs (none for a dry run), the pull
request (a closed one: ignored) and the change it makes, read from GitHub for the commands that plan
stages (change/build.py's GitHub source), with what the touch records of the history say of it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tool.bot.event import Action, Decision
from ci_tool.bot.flags import JENKINS_COMMANDS, PLANNED_COMMANDS, PR_COMMANDS
from ci_tool.change.build import GitHubPull, read_change
from ci_tool.change.value import ChangeSet
from ci_tool.dispatch.model import IssueState
from ci_tool.errors import DispatchError
from ci_tool.history.store import history_path
from ci_tool.pr_bot.settings import BotSettings
from ci_tool.pr_bot.settle import without_change
from ci_tool.stages.engines import Engine

if TYPE_CHECKING:  # PyGithub and python-jenkins: only when dispatching
    from ci_tool.dispatch.github import GitHubClient
    from ci_tool.dispatch.jenkins import JenkinsClient
    from ci_tool.dispatch.model import PullRequest


@dataclass(frozen=True)
class Clients:
    """The clients a decision needs: GitHub for any answer but an ignore, Jenkins for a command it runs on."""

    github: GitHubClient | None = None
    jenkins: JenkinsClient | None = None


@dataclass(frozen=True)
class Reached:
    """A decision with what handling it read: the clients it needs, the pull request, and its change."""

    decision: Decision
    command: str | None  # the dispatched sub-command (None: nothing is dispatched)
    clients: Clients
    pr: PullRequest | None = None
    changes: ChangeSet | None = None


def read_pull_request(decision: Decision, settings: BotSettings, *, dry_run: bool, test_db: Path) -> Reached:
    """What a decision reads (see the module docstring); a dry run reads nothing."""
    event, request = decision.event, decision.request
    command = request.command if decision.action is Action.DISPATCH and request is not None else None
    on_jenkins = command in JENKINS_COMMANDS and Engine.JENKINS in settings.engines
    jenkins = settings.jenkins() if on_jenkins and not dry_run else None  # configured? (no request)
    github = None if dry_run or decision.action is Action.IGNORE else settings.github()
    pr = github.pull_request(event.repository, event.number) if github and command in PR_COMMANDS else None
    if pr is not None and pr.state is not IssueState.OPEN:  # closed since the event was sent
        decision = replace(decision, action=Action.IGNORE, reason=f"pull request #{pr.number} is {pr.state}")
        command = None
    changes: ChangeSet | None = None
    if github is not None and pr is not None and command in PLANNED_COMMANDS:
        source = GitHubPull(github, pr.repository, pr.number)
        try:
            changes = read_change(source, test_db=test_db, history=history_path(settings.history_option))
        except DispatchError as error:  # the reply says what failed; a request that need not read it goes on
            decision = without_change(decision, error)
            command = command if decision.action is Action.DISPATCH else None
    return Reached(decision, command, Clients(github, jenkins), pr, changes)
