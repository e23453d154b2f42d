"""What `bot handle` hands the application besides the files it names: its settings (the Jenkins and GitHub
options, and how to build a client from them) and its terminal. The command builds the clients (the options
and the credentials in the environment are its business); the application asks for one only when the
decision needs it, so an ignored comment needs no token and a dry run reaches nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ci_tool.report.links import ReportUrl
from ci_tool.stages.engines import Engine

if TYPE_CHECKING:  # PyGithub and python-jenkins: imported only to dispatch
    from ci_tool.dispatch.github import GitHubClient
    from ci_tool.dispatch.jenkins import JenkinsClient
    from ci_tool.dispatch.trigger import Pace
    from ci_tool.history.store import HistoryStore

Echo = Callable[[str], None]


class BotSettings(Protocol):
    """The options of `bot handle` that reach Jenkins and GitHub (commands/dispatch_options.py holds them)."""

    @property
    def engines(self) -> tuple[Engine, ...]: ...  # where /bot run, kill and reuse-pipeline act

    @property
    def jenkins_job(self) -> str: ...

    @property
    def wait(self) -> bool: ...  # follow the build to its end

    @property
    def history_option(self) -> Path | None: ...  # --history (None: $CI_TOOL_HISTORY, else the default file)

    @property
    def report_url(self) -> ReportUrl | None: ...

    def jenkins(self) -> JenkinsClient: ...

    def github(self) -> GitHubClient: ...

    def pace(self) -> Pace: ...

    def history(self) -> HistoryStore: ...  # opened for a dispatch: it holds the ledger


@dataclass(frozen=True)
class Terminal:
    """Where the application writes: what it did, for the log (`write`: the text as it is), and warnings and
    errors (`err`: one line each)."""

    write: Echo
    err: Echo

    def echo(self, line: str) -> None:
        self.write(line + "\n")
