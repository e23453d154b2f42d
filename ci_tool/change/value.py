"""A pull request's change as change-based selection reads it. Pure: the readers (git_read.py, github_read.py)
fetch it and build.py is the one way to build it.

    ChangeSet   what a pull request changes, the same value whether git (git_read.from_git) or the GitHub
                API (github_read.from_github) read it: the base (merge base) and
                head commits; the changed paths (a rename's old and new path both) and which of them were
                removed, added or renamed; when a base revision is known, each changed file the rules
                read (`rule_input`: the test-db lists and waives) as it is at the base and at the head;
                and, where the history has touch records, what they say of the change
                (touch_records.py); `touched_by`: the tests that ran what it edits
"""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ci_tool.change.touch_records import TouchEvidence
from ci_tool.layout import WAIVES_NAME


class FileStatus(enum.StrEnum):
    """What a change did to a path (GitHub's words; git's A, M, D, R)."""

    ADDED = "added"
    MODIFIED = "modified"
    REMOVED = "removed"
    RENAMED = "renamed"  # the new path; its old path counts as removed


@dataclass(frozen=True)
class ChangeSet:
    """What a change touches. `base` and `now` hold the changed rule inputs' texts (None: the file does not
    exist there); `base` is None when no base revision was given, so rules that compare cannot decide.
    `base_sha` and `head_sha` are None only in a value built by hand (a test's); `origin` says for people
    where the value was read (it takes no part in comparing two change sets)."""

    files: tuple[str, ...]
    test_db_dir: str = "test-db"  # repository-relative, no trailing "/"
    deleted: frozenset[str] = frozenset()
    base: Mapping[str, str | None] | None = None
    now: Mapping[str, str | None] = field(default_factory=dict)
    touches: TouchEvidence | None = None  # the touch records of its files (None: none were read)
    base_sha: str | None = None
    head_sha: str | None = None
    added: frozenset[str] = frozenset()
    renamed_from: Mapping[str, str] = field(default_factory=dict)  # new path -> old path
    origin: str = field(default="", compare=False)

    @property
    def touched_by(self) -> Mapping[str, frozenset[str]]:
        """Changed file -> the tests whose fresh touch records, on any GPU type, ran a unit the change edits
        in it (only files that have records)."""
        if self.touches is None:
            return {}
        return {path: found.touched_by() for path, found in self.touches.files.items()}

    def status(self, path: str) -> FileStatus:
        """What the change did to `path`, one of its files."""
        if path in self.renamed_from:
            return FileStatus.RENAMED
        if path in self.deleted:
            return FileStatus.REMOVED
        return FileStatus.ADDED if path in self.added else FileStatus.MODIFIED

    def head_lists(self) -> dict[str, str | None]:
        """The changed test-db lists as the head has them, by file name (None: gone at the head), so a
        checkout of the base branch can render the lists the pull request proposes."""
        return {
            posixpath.basename(path): text
            for path, text in self.now.items()
            if posixpath.dirname(path) == self.test_db_dir and path.endswith((".yml", ".yaml"))
        }

    @property
    def span(self) -> str:
        """`1a2b3c4d5e6f..7f8e9d0c1b2a`, the commits it was read between ("" when it names none)."""
        if self.base_sha is None or self.head_sha is None:
            return ""
        return f"{self.base_sha[:12]}..{self.head_sha[:12]}"


def is_test_file(path: str) -> bool:
    """Whether pytest collects the file by its name (its default `python_files`: test_*.py, *_test.py)."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def test_path_of(path: str) -> str | None:
    """What running a changed test-side file means: a test file runs itself, a conftest.py its folder (every
    test under it uses what it sets up); None for any other file (a helper module, data)."""
    if posixpath.basename(path) == "conftest.py":
        return posixpath.dirname(path) or "."
    return path if is_test_file(path) else None


def rule_input(path: str, test_db_dir: str) -> bool:
    """Whether the change-based rules read `path`'s text at the base and the head: a test-db list or the
    waives file (both builders fetch exactly these)."""
    folder, name = posixpath.split(path)
    return folder == test_db_dir and (name == WAIVES_NAME or name.endswith((".yml", ".yaml")))


@dataclass(frozen=True)
class ChangedPath:
    """One path of a change as git's name-status or GitHub's pulls/N/files list it."""

    path: str
    status: FileStatus
    previous: str | None = None  # a rename's old path


def change_of(
    changed: Sequence[ChangedPath],
    *,
    test_db_dir: str,
    base_sha: str,
    head_sha: str,
    base: Mapping[str, str | None],
    now: Mapping[str, str | None],
    origin: str,
) -> ChangeSet:
    """The ChangeSet of a list of changed paths with the rule inputs' texts (the one assembly both builders
    use, so the two cannot differ in how they count a rename or a removal)."""
    renamed = {found.path: found.previous for found in changed if found.previous is not None}
    files = sorted({found.path for found in changed} | set(renamed.values()))
    removed = {found.path for found in changed if found.status is FileStatus.REMOVED} | set(renamed.values())
    return ChangeSet(
        files=tuple(files),
        test_db_dir=test_db_dir,
        deleted=frozenset(removed),
        base={path: base.get(path) for path in files if rule_input(path, test_db_dir)},
        now={path: now.get(path) for path in files if rule_input(path, test_db_dir)},
        base_sha=base_sha,
        head_sha=head_sha,
        added=frozenset(found.path for found in changed if found.status is FileStatus.ADDED),
        renamed_from=renamed,
        origin=origin,
    )
