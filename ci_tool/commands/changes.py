"""A pull request's change, read from the files and from git, for the commands that select stages (run,
stage select, bot plan; they pass it to stages.select.select_for_change):

    --changed-files FILE   the changed paths (`git diff --name-only BASE...HEAD`), one per line
    --base REF             the target branch: the test-db files are compared with their text at the merge
                           base of REF and HEAD (without it, the waives and test-db rules cannot decide);
                           without --changed-files, the paths come from git too (since the merge base,
                           uncommitted and untracked files included)

and the pull request's effective waives (`merged_waives`): its waives file merged with the target branch
tip's (testdb/waive_merge.py), for `ci-tool testdb merge-waives` and `ci-tool run --base`.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from ci_tool import gitinfo
from ci_tool.errors import TestDbError
from ci_tool.history.locator import History
from ci_tool.history.store import HistoryStore
from ci_tool.history.touches import touched_by
from ci_tool.stages.changes import ChangeSet
from ci_tool.testdb.waive_merge import MergedWaives, merge_waives
from ci_tool.text_file import read_text


def change_set(
    changed_files: tuple[str, ...],
    *,
    base: str | None,
    test_db: Path,
    root: Path | None = None,
    history: History | None = None,
) -> ChangeSet | None:
    """The change the options describe (None: no changed files, so no path-based step runs), with the touch
    records `history` holds of its files (none when there is no such file)."""
    root = root or Path.cwd()
    merge_base = gitinfo.merge_base(root, base) if base is not None else None
    files = changed_files or (gitinfo.changed_since(root, merge_base) if merge_base is not None else ())
    if not files:
        return None
    folder = repository_path(test_db, root)
    in_test_db = [path for path in files if posixpath.dirname(path) == folder]
    base_texts = {path: gitinfo.file_at(root, merge_base, path) for path in in_test_db} if merge_base else None
    return ChangeSet(
        files=tuple(files),
        test_db_dir=folder,
        deleted=frozenset(path for path in files if not (root / path).exists()),
        base=base_texts,
        now={path: _text(root / path) for path in in_test_db},
        touched_by=_touched_by(history, files),
    )


def _touched_by(history: History | None, files: tuple[str, ...]) -> dict[str, frozenset[str]]:
    if history is None or (isinstance(history, Path) and not history.is_file()):
        return {}
    with HistoryStore(history, read_only=True) as store:
        return touched_by(store, files)


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
