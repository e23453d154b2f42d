"""A pull request's change, read from the files and from git, for the commands that select stages (run,
stage select, bot plan; they pass it to stages.select.select_for_change):

    --changed-files FILE   the changed paths (`git diff --name-only BASE...HEAD`), one per line
    --head REF             with --base: the commit the change ends at (CI: HEAD, so files the job writes
                           in the checkout are no change) instead of the work tree
    --base REF             the target branch: the test-db files are compared with their text at the merge
                           base of REF and HEAD (without it, the waives and test-db rules cannot decide);
                           without --changed-files, the whole change comes from git (`from_git`: since
                           the merge base, uncommitted and untracked files included, renames found),
                           the same value the bot reads through the GitHub API (dispatch/pull_change.py)

and the pull request's effective waives (`merged_waives`): its waives file merged with the target branch
tip's (testdb/waive_merge.py), for `ci-tool testdb merge-waives` and `ci-tool run --base`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ci_tool import gitinfo
from ci_tool.errors import TestDbError
from ci_tool.history.locator import History
from ci_tool.history.store import HistoryStore
from ci_tool.run.touch_evidence import touch_evidence
from ci_tool.stages.changes import ChangedPath, ChangeSet, FileStatus, change_of, rule_input
from ci_tool.stages.touch_records import TouchEvidence
from ci_tool.testdb.waive_merge import MergedWaives, merge_waives
from ci_tool.text_file import read_text


def change_set(
    changed_files: tuple[str, ...],
    *,
    base: str | None,
    head: str | None = None,
    test_db: Path,
    root: Path | None = None,
    history: History | None = None,
) -> ChangeSet | None:
    """The change the options describe (None: no changed files, so no path-based step runs), with what the
    touch records `history` holds say of it (none without such a file, or without a base to judge them by:
    run/touch_evidence.py). `head`: the commit the change ends at (None: the work tree); a --changed-files
    list is always read against the work tree."""
    root = root or Path.cwd()
    folder = repository_path(test_db, root)
    if base is not None and not changed_files:
        found = from_git(root, base, head, test_db_dir=folder)
        return replace(found, touches=_touches(history, root, found, head)) if found.files else None
    if not changed_files:
        return None
    merge_base = gitinfo.merge_base(root, base) if base is not None else None
    in_test_db = [path for path in changed_files if rule_input(path, folder)]
    base_texts = {path: gitinfo.file_at(root, merge_base, path) for path in in_test_db} if merge_base else None
    listed = ChangeSet(
        files=tuple(changed_files),
        test_db_dir=folder,
        deleted=frozenset(path for path in changed_files if not (root / path).exists()),
        base=base_texts,
        now={path: _text(root / path) for path in in_test_db},
        base_sha=merge_base,
        origin=f"the changed-files list and git (merge base {merge_base[:12]})" if merge_base else "",
    )
    return replace(listed, touches=_touches(history, root, listed, None))


_STATUS = {"A": FileStatus.ADDED, "M": FileStatus.MODIFIED, "D": FileStatus.REMOVED, "R": FileStatus.RENAMED}


def from_git(root: Path, base_ref: str, head_ref: str | None = None, *, test_db_dir: str) -> ChangeSet:
    """What `head_ref` (None: the work tree, uncommitted and untracked files included) changes since its
    merge base with `base_ref`: the value dispatch/pull_change.from_github reads for a pull request."""
    merge_base = gitinfo.merge_base(root, base_ref, head_ref or "HEAD")
    head_sha = gitinfo.commit_of(root, head_ref or "HEAD") or ""  # a checkout: merge_base found one
    listed = gitinfo.name_status(root, merge_base, head_ref)
    changed = [ChangedPath(found.path, _STATUS[found.letter], found.previous) for found in listed]
    inputs = {path for f in changed for path in (f.path, f.previous) if path and rule_input(path, test_db_dir)}
    if head_ref is None:
        now = {path: _text(root / path) for path in inputs}
    else:
        now = {path: gitinfo.file_at(root, head_ref, path) for path in inputs}
    head = head_ref or "the work tree"
    return change_of(
        changed,
        test_db_dir=test_db_dir,
        base_sha=merge_base,
        head_sha=head_sha,
        base={path: gitinfo.file_at(root, merge_base, path) for path in inputs},
        now=now,
        origin=f"the change {merge_base[:12]}..{head_sha[:12]} read from git ({head} against {base_ref})",
    )


def with_pull_request_touches(change: ChangeSet, history: History | None, root: Path) -> ChangeSet:
    """A pull request's change read from the GitHub API (dispatch/pull_change.py), with what the touch records
    say of it judged in this clone, as the build judges them in its checkout of the head: only when the clone
    holds the merge base and the head (the bot workflow fetches the pull request's head). Otherwise it keeps
    no touch evidence, so a recorded source file runs its full set in this preview, and its origin says why."""
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


def merged_waives(waives: Path, *, base: str, root: Path | None = None) -> MergedWaives:
    """The work tree's waives file merged with its text at the tip of `base` and at the merge base."""
    root = root or Path.cwd()
    path = repository_path(waives, root)
    mine = read_text(waives, name="the waives file", error=TestDbError) if waives.is_file() else ""
    merge_base = gitinfo.merge_base(root, base)  # first: it names an unknown REF best
    tip = gitinfo.file_at(root, base, path) or ""
    at_base = gitinfo.file_at(root, merge_base, path) or ""
    return merge_waives(mine, tip, at_base, files=(str(waives), f"{path} at {base}", f"{path} at the merge base"))


def repository_path(path: Path, root: Path) -> str:
    """`path` as a repository-relative posix path (as git and the changed-files list write them)."""
    absolute = path if path.is_absolute() else root / path
    try:
        return absolute.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
