"""The one way to build a pull request's change, for every command that selects stages or orders tests (run,
stage select, stage run, bot plan, the bot's flow): a source says where the change is read, and the builder
adds what the touch records of the history say of it (touch_evidence.py).

    GitRange(base, head)               git: HEAD (or `head`; None: the work tree) since its merge base with
                                       `base` (git_read.from_git): `--base`/`--head`, as the generated
                                       Jenkins and GitHub jobs and local runs pass them
    GitHubPull(client, repo, number)   the GitHub API (github_read.from_github): the bot, before any checkout
                                       of the pull request's head; its touch records are judged in this clone
                                       only when it holds the merge base and the head

Both readers assemble the value through value.change_of, so one pull request is one ChangeSet either way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tool import gitinfo
from ci_tool.change.git_read import from_git, repository_path
from ci_tool.change.touch_evidence import touch_evidence
from ci_tool.change.touch_records import TouchEvidence
from ci_tool.change.value import ChangeSet
from ci_tool.history.locator import History
from ci_tool.history.store import HistoryStore

if TYPE_CHECKING:
    from ci_tool.dispatch.github import GitHubClient


@dataclass(frozen=True)
class GitRange:
    """A change git reads: `head` (None: the work tree) since its merge base with the target branch `base`."""

    base: str
    head: str | None = None


@dataclass(frozen=True)
class GitHubPull:
    """A change the GitHub API reads: pull request `number` of `repository`."""

    client: GitHubClient
    repository: str
    number: int


ChangeSource = GitRange | GitHubPull


def read_change(source: ChangeSource, *, test_db: Path, history: History | None, root: Path | None = None) -> (
    ChangeSet | None
):
    """The change `source` names, with what the touch records `history` holds say of it (none without such a
    file). From git: None when it changes no file (no path-based step runs). From GitHub: the change as the
    pull request has it (DispatchError when GitHub cannot give it)."""
    root = root or Path.cwd()
    folder = repository_path(test_db, root)
    if isinstance(source, GitRange):
        found = from_git(root, source.base, source.head, test_db_dir=folder)
        return replace(found, touches=_touches(history, root, found, source.head)) if found.files else None
    from ci_tool.change.github_read import from_github  # PyGithub: only when GitHub is asked

    return with_pull_request_touches(
        from_github(source.client, source.repository, source.number, test_db_dir=folder), history, root
    )


def with_pull_request_touches(change: ChangeSet, history: History | None, root: Path) -> ChangeSet:
    """A pull request's change read from the GitHub API, with what the touch records say of it judged in this
    clone, as the build judges them in its checkout of the head: only when the clone holds the merge base and
    the head (the bot workflow fetches the pull request's head). Otherwise it keeps no touch evidence, so a
    recorded source file runs its full set in this preview, and its origin says why."""
    if change.base_sha is None or change.head_sha is None:
        return change
    missing = [sha for sha in (change.base_sha, change.head_sha) if not gitinfo.has_commit(root, sha)]
    if missing:
        why = f"touch records not judged: this clone lacks {', '.join(sha[:12] for sha in missing)}"
        return replace(change, origin=f"{change.origin} ({why})" if change.origin else why)
    return replace(change, touches=_touches(history, root, change, change.head_sha))


def _touches(history: History | None, root: Path, change: ChangeSet, head: str | None) -> TouchEvidence | None:
    """What the touch records say of `change` (None without a history file or a base to judge them by)."""
    if change.base_sha is None or history is None or (isinstance(history, Path) and not history.is_file()):
        return None
    with HistoryStore(history, read_only=True) as store:
        return touch_evidence(store, root, base=change.base_sha, head=head, files=change.files, deleted=change.deleted)
