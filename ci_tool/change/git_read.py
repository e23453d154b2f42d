"""A pull request's change read from git (`--base REF [--head REF]`), and its effective waives. I/O: it runs
git in the checkout and reads the work tree; git_rows.py turns git's answers into the change's rows, and
value.change_of assembles them as github_read.py's rows are, so the two readers cannot differ.

    from_git        what HEAD (or --head) changes since its merge base with the target branch (--base):
                    uncommitted and untracked files included when it reads the work tree, renames found
    merged_waives   the work tree's waives file merged with the target branch tip's (testdb/waive_merge.py),
                    for `ci-tool testdb merge-waives` and `ci-tool run --base`
"""

from __future__ import annotations

from pathlib import Path

from ci_tool import gitinfo
from ci_tool.change.git_rows import changed_paths
from ci_tool.change.value import ChangeSet, change_of, rule_input
from ci_tool.errors import TestDbError
from ci_tool.testdb.waive_merge import MergedWaives, merge_waives
from ci_tool.text_file import read_text


def from_git(root: Path, base_ref: str, head_ref: str | None = None, *, test_db_dir: str) -> ChangeSet:
    """What `head_ref` (None: the work tree, uncommitted and untracked files included) changes since its
    merge base with `base_ref`: the value github_read.from_github reads for a pull request."""
    merge_base = gitinfo.merge_base(root, base_ref, head_ref or "HEAD")
    head_sha = gitinfo.commit_of(root, head_ref or "HEAD") or ""  # a checkout: merge_base found one
    changed = changed_paths(gitinfo.name_status(root, merge_base, head_ref))
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
    """`path` as a repository-relative posix path (as git and the GitHub API write them)."""
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
