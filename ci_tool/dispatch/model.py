"""What the CI services answer, as frozen values (no HTTP here: the pure bot modules read these).

    Build        a Jenkins build: number, URL, running or its result, its parameters (also a GitHub
                 Actions run: its id, page, state and the fields of its run name, dispatch/actions.py)
    QueueItem    a Jenkins queue item: the build it named, or cancelled, or why it still waits
    JenkinsCase  one test case of a build's test report
    Console      a piece of a build's console text and where the next one starts
    PullRequest  what the bot reads of a pull request: head, base, author, labels (its change is a
                 change.value.ChangeSet, change/github_read.py)
    Commit       a commit's tree (the code it holds) and committer date
    Status       a commit status: context, state, description, link
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from ci_tool.outcomes import BuildResult, TestOutcome

STATUS_DESCRIPTION_LIMIT = 140  # GitHub refuses longer commit status descriptions


@dataclass(frozen=True)
class Build:
    job: str
    number: int
    url: str
    building: bool
    result: BuildResult | None  # None while building
    parameters: Mapping[str, str] = field(default_factory=dict)
    log_url: str = ""  # where its log is read, when not Jenkins' console page (a GitHub Actions run's page)

    @property
    def console_url(self) -> str:
        return self.log_url or self.url + "console"


@dataclass(frozen=True)
class QueueItem:
    id: int
    url: str
    build_number: int | None = None  # set once the item left the queue
    build_url: str = ""
    cancelled: bool = False
    why: str = ""  # why it still waits
    parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JenkinsCase:
    """One test case of a Jenkins test report; the stage is the class name's prefix (ci-tool's JUnit)."""

    class_name: str
    name: str
    outcome: TestOutcome
    duration_seconds: float = 0.0
    message: str = ""
    output: str = ""
    properties: Mapping[str, str] = field(default_factory=dict)  # its JUnit testcase properties (keepProperties)


@dataclass(frozen=True)
class Console:
    text: str
    next_start: int
    more: bool  # the build is still writing


class IssueState(enum.StrEnum):
    """A GitHub issue's or pull request's state (the value is GitHub's)."""

    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True)
class PullRequest:
    repository: str
    number: int
    head_sha: str
    base_ref: str
    author: str
    state: IssueState
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Commit:
    sha: str
    tree_sha: str  # equal trees: the same code, whatever the history
    committed_at: float  # the committer date (seconds since the epoch), as the commit itself says


class StatusState(enum.StrEnum):
    """A GitHub commit status."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"


@dataclass(frozen=True)
class Status:
    context: str
    state: StatusState
    description: str
    target_url: str = ""
