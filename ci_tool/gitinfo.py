"""The only module that runs git: what code a checkout holds, and a file or a diff at another revision.

    code_version(root)        the commit and, when the work tree differs from it, a hash of the
                              uncommitted change (tracked files' diff against HEAD, and the untracked
                              files git does not ignore, by path and content, but for what ci-tool and the
                              generated pipelines write: output_files.py); None outside a checkout
    commit_of(root, rev)      the commit id a revision names (None outside a checkout)
    merge_base(root, ref)     the commit a pull request's change is measured from (`git merge-base`)
    changed_since(root, rev)  the paths the work tree changes since `rev` (committed, uncommitted, untracked
                              but for ci-tool's output)
    name_status(root, rev, head)  what `head` (None: the work tree) changes since `rev`, path by path:
                              A, M, D or R (a rename, with its old path), as GitHub's pulls/N/files says
    file_at(root, rev, path)  a file's text at a revision (None where the revision has no such file)
    has_commit(root, sha)     whether the clone holds that commit
    changed_between(root, old, new)  the paths that differ between two commits
    files_at(root, rev)       every file a revision holds
    line_diff(root, rev, head, path)  one file's `git diff -U0` (head None: the work tree)
    files_naming(root, head, names, glob)  the files matching `glob` at `head` (None: the work tree, untracked
                              files too) that hold any of `names` as a whole word

Two runs test the same code when both the commit and the uncommitted hash agree: a run on a clean
checkout and a run with an edit differ even on one commit. git runs without the user's diff drivers,
colours or pagers, so the hash is the same on every machine.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tool import output_files
from ci_tool.errors import GitError
from ci_tool.text_file import read_bytes

_GIT = ("git", "-c", "core.quotepath=off", "-c", "diff.noprefix=false")
_TIMEOUT_SECONDS = 120


@dataclass(frozen=True)
class CodeVersion:
    """The code a run tested: a commit, and the hash of what the work tree adds to it ("" when clean)."""

    commit: str
    diff_hash: str = ""

    @property
    def clean(self) -> bool:
        return not self.diff_hash

    def describe(self) -> str:
        """`commit 1a2b3c4d5e6f (clean)` or `commit 1a2b3c4d5e6f + uncommitted changes 9f8e7d6c`."""
        if self.clean:
            return f"commit {self.commit[:12]} (clean)"
        return f"commit {self.commit[:12]} + uncommitted changes {self.diff_hash[:8]}"


def _git(
    root: Path, *args: str, check: bool = True, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    try:
        done = subprocess.run(
            [*_GIT, *args], cwd=root, input=stdin, capture_output=True, check=False, timeout=_TIMEOUT_SECONDS,
            env=environment,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitError(f"cannot run git in {str(root)!r}: {error}") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {' '.join(args)} failed in {str(root)!r}: {message[0] if message else done.returncode}")
    return done


def is_checkout(root: Path) -> bool:
    """Whether `root` is inside a git work tree (False also when git is not installed)."""
    try:
        done = _git(root, "rev-parse", "--is-inside-work-tree", check=False)
    except GitError:
        return False
    return done.returncode == 0 and done.stdout.strip() == b"true"


def code_version(root: Path) -> CodeVersion | None:
    """The code the checkout at `root` holds (see the module docstring); None outside a checkout or
    before its first commit."""
    if not is_checkout(root):
        return None
    head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        return None
    digest = hashlib.sha256()
    diff = _git(root, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--binary", "HEAD", "--", ".").stdout
    digest.update(diff)
    names = _untracked_code(root)
    for name in names:
        digest.update(b"\0untracked\0" + os.fsencode(name) + b"\0")
        digest.update(output_files.content_hash(root / name))  # b"": gone since, or unreadable: its name alone
    changed = bool(diff) or bool(names)
    return CodeVersion(head.stdout.decode().strip(), digest.hexdigest() if changed else "")


def _untracked_code(root: Path) -> list[str]:
    """The untracked files below `root` that git does not ignore and that are not ci-tool's output
    (output_files.py), relative to `root`, sorted."""
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z", "--", ".").stdout
    manifest = output_files.recorded(root)
    names = (os.fsdecode(name) for name in untracked.split(b"\0") if name)
    return sorted(name for name in names if not output_files.is_output(root, name, manifest))


def commit_of(root: Path, rev: str = "HEAD") -> str | None:
    """The commit id `rev` names (`git rev-parse`); None outside a checkout, a GitError for an unknown rev."""
    if not is_checkout(root):
        return None
    return _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").stdout.decode().strip()


def merge_base(root: Path, ref: str, head: str = "HEAD") -> str:
    """The commit `head`'s change is measured from: `git merge-base REF HEAD` (a GitError for an unknown REF)."""
    try:
        return _git(root, "merge-base", ref, head).stdout.decode().strip()
    except GitError as error:
        error.hint = "fetch the target branch first (git fetch origin BRANCH) or name an existing ref"
        raise


def changed_since(root: Path, rev: str) -> tuple[str, ...]:
    """Repository-relative paths the work tree changes since `rev`: changed, added and deleted tracked
    files, and untracked files git does not ignore; sorted."""
    tracked = _git(root, "diff", "--name-only", "--no-renames", "-z", rev, "--", ".").stdout
    top = _git(root, "rev-parse", "--show-prefix").stdout.decode().strip()  # `root` below the top: relative
    names = {os.fsdecode(name).removeprefix(top) for name in tracked.split(b"\0") if name}
    return tuple(sorted(names.union(_untracked_code(root))))


@dataclass(frozen=True)
class NameStatus:
    """One changed path: git's status letter (A, M, D, R; a copy counts as A, a type change as M)."""

    letter: str
    path: str
    previous: str | None = None  # R: the old path


def name_status(root: Path, rev: str, head: str | None = None) -> tuple[NameStatus, ...]:
    """What `head` (None: the work tree, untracked files git does not ignore added, but for ci-tool's output)
    changes since `rev`, renames found as `git diff -M` finds them; repository-relative paths, sorted."""
    listed = _git(root, "diff", "--name-status", "-M", "-z", rev, *([head] if head else []), "--", ".").stdout
    fields = [os.fsdecode(field) for field in listed.split(b"\0")]
    found: list[NameStatus] = []
    index = 0
    while index < len(fields) and fields[index]:
        letter = fields[index][0]
        if letter in "RC":  # R100\0old\0new
            old, new = fields[index + 1], fields[index + 2]
            found.append(NameStatus("R", new, old) if letter == "R" else NameStatus("A", new))
            index += 3
        else:
            found.append(NameStatus(letter if letter in "ADM" else "M", fields[index + 1]))
            index += 2
    top = _git(root, "rev-parse", "--show-prefix").stdout.decode().strip()
    if top:  # `root` below the top: git diff names paths from the top, relative to `root` they read
        found = [NameStatus(f.letter, f.path.removeprefix(top), f.previous and f.previous.removeprefix(top))
                 for f in found]  # fmt: skip
    if head is None:  # the work tree: its untracked files are added, but for ci-tool's output
        found += [NameStatus("A", name) for name in _untracked_code(root)]
    return tuple(sorted(found, key=lambda f: f.path))


def file_at(root: Path, rev: str, path: str) -> str | None:
    """The text of `path` (repository-relative) at `rev`; None when `rev` has no such file."""
    exists = _git(root, "cat-file", "-e", f"{rev}:{path}", check=False)
    if exists.returncode != 0:
        _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")  # an unknown rev is an error
        return None
    return _git(root, "show", f"{rev}:{path}").stdout.decode("utf-8", "replace")


def texts_at(root: Path, rev: str | None, paths: Collection[str]) -> dict[str, str | None]:
    """The texts of many repository-relative `paths` at `rev` in one `git cat-file --batch` (None: `rev` has no
    such file, or it does not read), or in the work tree when `rev` is None."""
    if rev is None:
        return {path: _work_tree_text(root / path) for path in paths}
    order = sorted(path for path in paths if "\n" not in path)  # the batch reads one name a line
    found: dict[str, str | None] = {path: file_at(root, rev, path) for path in paths if "\n" in path}
    if not order:
        return found
    _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")  # an unknown rev is an error
    out = _git(root, "cat-file", "--batch", stdin="".join(f"{rev}:{path}\n" for path in order).encode()).stdout
    at = 0
    for path in order:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if len(header) != 3:  # `<rev>:<path> missing`
            found[path], at = None, end + 1
            continue
        size = int(header[2])
        blob = out[end + 1 : end + 1 + size]
        found[path] = blob.decode("utf-8", "replace") if header[1] == b"blob" else None  # a folder is no file
        at = end + 1 + size + 1  # the object, then its newline
    return found


def _work_tree_text(path: Path) -> str | None:
    """A work-tree file's text as a revision's would read (undecodable bytes replaced); None where there is no
    file (a folder, as git has none either). What is no regular file (a FIFO that would block for ever, a link
    to /dev/zero that would fill memory) or is larger than text_file.MAX_BYTES is a located GitError."""
    try:
        data = read_bytes(path, name="the work tree's file", error=GitError)
    except GitError as error:
        cause = error.__cause__
        if isinstance(cause, FileNotFoundError | NotADirectoryError | IsADirectoryError) or path.is_dir():
            return None
        raise
    return data.decode("utf-8", "replace")


def has_commit(root: Path, sha: str) -> bool:
    """Whether the clone at `root` holds the commit `sha` (a shallow clone may not)."""
    if not sha:
        return False
    return _git(root, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0


def changed_between(root: Path, old: str, new: str) -> frozenset[str]:
    """The repository-relative paths that differ between commits `old` and `new` (renames as two paths)."""
    listed = _git(root, "diff", "--name-only", "--no-renames", "-z", old, new, "--", ".").stdout
    top = _git(root, "rev-parse", "--show-prefix").stdout.decode().strip()
    return frozenset(os.fsdecode(name).removeprefix(top) for name in listed.split(b"\0") if name)


def files_at(root: Path, rev: str) -> frozenset[str]:
    """Every file revision `rev` holds, repository-relative (below `root`: relative to it)."""
    listed = _git(root, "ls-tree", "-r", "--name-only", "-z", rev, "--", ".").stdout
    return frozenset(os.fsdecode(name) for name in listed.split(b"\0") if name)


def line_diff(root: Path, rev: str, head: str | None, path: str) -> str:
    """`git diff -U0` of one file from `rev` to `head` (None: the work tree): its hunks, no context lines."""
    options = ("diff", "-U0", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv")
    return _git(root, *options, rev, *([head] if head else []), "--", path).stdout.decode("utf-8", "replace")


def files_naming(root: Path, head: str | None, names: Collection[str], glob: str | Sequence[str]) -> frozenset[str]:
    """The repository-relative files matching `glob` (a pathspec, or several: `*`, `:!*.md`) at `head` (None:
    the work tree, its untracked files too) in which any of `names` stands as a whole word (`git grep -w -F`)."""
    if not names:
        return frozenset()
    patterns = [argument for name in sorted(names) for argument in ("-e", name)]
    where = [head] if head else ["--untracked"]
    globs = [glob] if isinstance(glob, str) else list(glob)
    listed = _git(root, "grep", "-l", "-z", "-w", "-F", "--full-name", *patterns, *where, "--", *globs, check=False)
    if listed.returncode not in (0, 1):  # 1: no file names them
        message = listed.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git grep failed in {str(root)!r}: {message or listed.returncode}")
    prefix = f"{head}:" if head else ""
    return frozenset(os.fsdecode(name).removeprefix(prefix) for name in listed.stdout.split(b"\0") if name)
