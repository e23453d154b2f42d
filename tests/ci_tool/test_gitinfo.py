"""gitinfo against real git repositories: the code a checkout holds, files at a revision, merge bases."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tool import gitinfo, output_files, text_file
from ci_tool.errors import GitError


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / "a.txt").write_text("one\n")
    (root / ".gitignore").write_text("ignored/\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    return root


def test_a_clean_checkout_is_its_commit(repo: Path) -> None:
    version = gitinfo.code_version(repo)
    assert version == gitinfo.CodeVersion(git(repo, "rev-parse", "HEAD"), "")
    assert version is not None and version.describe() == f"commit {version.commit[:12]} (clean)"


EDITS = {
    "tracked edit": lambda root: (root / "a.txt").write_text("two\n"),
    "untracked file": lambda root: (root / "b.txt").write_text("new\n"),
    "staged file": lambda root: ((root / "c.txt").write_text("c\n"), git(root, "add", "c.txt")),
    "deletion": lambda root: (root / "a.txt").unlink(),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_an_uncommitted_change_has_its_own_hash(repo: Path, edit) -> None:  # type: ignore[no-untyped-def]
    clean = gitinfo.code_version(repo)
    edit(repo)
    changed, again = gitinfo.code_version(repo), gitinfo.code_version(repo)
    assert clean is not None and changed is not None
    assert (changed.commit, changed.clean, changed == again) == (clean.commit, False, True)


def test_ignored_files_do_not_change_the_code(repo: Path) -> None:
    (repo / "ignored").mkdir()
    (repo / "ignored" / "x.log").write_text("results\n")
    assert gitinfo.code_version(repo) == gitinfo.CodeVersion(git(repo, "rev-parse", "HEAD"), "")


CI_WRITES = {  # what the generated pipelines leave in a checkout before and between stage runs
    "state folder": ".ci-tool/durations.json",
    "results": "results/CPU-Generic-1/junit.xml",
    "request": "request.json",
    "selection": "selection.json",
}


@pytest.mark.parametrize("path", CI_WRITES.values(), ids=CI_WRITES.keys())
def test_what_ci_writes_in_a_checkout_is_not_code(repo: Path, path: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text("{}\n")
    assert gitinfo.code_version(repo) == gitinfo.CodeVersion(git(repo, "rev-parse", "HEAD"), "")


def test_a_tracked_file_where_ci_writes_is_still_code(repo: Path) -> None:
    (repo / "results").mkdir()
    (repo / "results" / "expected.txt").write_text("one\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "tracked results")
    (repo / "results" / "expected.txt").write_text("two\n")
    version = gitinfo.code_version(repo)
    assert version is not None and not version.clean


def work_tree_changes(repo: Path) -> tuple[bool, tuple[str, ...], tuple[gitinfo.NameStatus, ...]]:
    """Whether the work tree is its commit, and what changed_since and name_status see changed."""
    version = gitinfo.code_version(repo)
    assert version is not None
    return version.clean, gitinfo.changed_since(repo, "HEAD"), gitinfo.name_status(repo, "HEAD")


@pytest.mark.parametrize("path", CI_WRITES.values(), ids=CI_WRITES.keys())
def test_what_ci_writes_in_a_checkout_is_no_change_either(repo: Path, path: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text("{}\n")
    assert work_tree_changes(repo) == (True, (), ())


def test_output_ci_tool_wrote_is_not_code(repo: Path) -> None:
    (repo / "r.html").write_text("<p>report</p>\n")
    (repo / "site" / "runs").mkdir(parents=True)
    (repo / "site" / "runs" / "one.html").write_text("<p>run</p>\n")
    output_files.record([repo / "r.html"], root=repo)
    output_files.record_tree(repo / "site", root=repo)
    assert work_tree_changes(repo) == (True, (), ())
    assert (repo / ".ci-tool" / "outputs.sha256").read_text().splitlines()[0].endswith("  r.html")


def test_an_output_edited_since_counts_again(repo: Path) -> None:
    (repo / "r.html").write_text("<p>report</p>\n")
    output_files.record([repo / "r.html"], root=repo)
    (repo / "r.html").write_text("<p>mine now</p>\n")
    assert work_tree_changes(repo) == (False, ("r.html",), (gitinfo.NameStatus("A", "r.html"),))


def test_a_tracked_file_ci_tool_wrote_is_still_code(repo: Path) -> None:
    (repo / "a.txt").write_text("written by ci-tool\n")
    output_files.record([repo / "a.txt"], root=repo)
    assert work_tree_changes(repo) == (False, ("a.txt",), (gitinfo.NameStatus("M", "a.txt"),))


def test_the_checkout_itself_is_never_an_output_folder(repo: Path) -> None:
    (repo / "new.py").write_text("x = 1\n")
    output_files.record_tree(repo, root=repo)
    assert work_tree_changes(repo) == (False, ("new.py",), (gitinfo.NameStatus("A", "new.py"),))


def test_two_different_changes_differ(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    first = gitinfo.code_version(repo)
    (repo / "a.txt").write_text("three\n")
    assert first != gitinfo.code_version(repo)


def test_outside_a_checkout_there_is_no_code(tmp_path: Path) -> None:
    assert (gitinfo.code_version(tmp_path), gitinfo.is_checkout(tmp_path)) == (None, False)


def test_a_file_at_a_revision(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-q", "-am", "second")
    assert (gitinfo.file_at(repo, first, "a.txt"), gitinfo.file_at(repo, "HEAD", "a.txt")) == ("one\n", "two\n")
    assert gitinfo.file_at(repo, first, "missing.txt") is None


def test_many_files_at_a_revision_or_in_the_work_tree(repo: Path) -> None:
    """One batch: a file, a missing one, a folder (no file), and the work tree's edit when no revision is given."""
    (repo / "sub").mkdir()
    (repo / "sub" / "b.txt").write_text("bee\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "second")
    (repo / "a.txt").write_text("edited\n")
    paths = ["a.txt", "sub", "sub/b.txt", "gone.txt"]
    assert gitinfo.texts_at(repo, "HEAD", paths) == {"a.txt": "one\n", "sub": None, "sub/b.txt": "bee\n",
                                                     "gone.txt": None}  # fmt: skip
    assert gitinfo.texts_at(repo, None, paths) == {"a.txt": "edited\n", "sub": None, "sub/b.txt": "bee\n",
                                                   "gone.txt": None}  # fmt: skip
    with pytest.raises(GitError):
        gitinfo.texts_at(repo, "no-such-rev", paths)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("make", "found"),
    [(lambda path: os.mkfifo(path), "a FIFO (a named pipe)"), (lambda path: path.symlink_to("/dev/zero"),
      "a character device")],
    ids=["fifo", "link-to-dev-zero"],
)  # fmt: skip
def test_a_work_tree_file_that_is_no_regular_file_is_a_located_error(
    repo: Path, make: Callable[[Path], None], found: str
) -> None:
    """A FIFO would block the reader for ever, /dev/zero fill its memory: both are refused at once."""
    make(repo / "b.py")
    with pytest.raises(GitError) as raised:
        gitinfo.texts_at(repo, None, ["a.txt", "b.py"])
    assert (
        str(raised.value)
        == f"{repo / 'b.py'}: cannot read the work tree's file: expected a regular file, found {found}"
    )


def test_a_work_tree_file_over_the_cap_is_a_located_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_file, "MAX_BYTES", 2**20)
    (repo / "big.py").write_bytes(b"x" * (2**20 + 1))
    with pytest.raises(GitError) as raised:
        gitinfo.texts_at(repo, None, ["big.py"])
    assert str(raised.value) == f"{repo / 'big.py'}: cannot read the work tree's file: it is larger than 1 MiB"


def test_a_work_tree_file_that_is_not_utf8_reads_as_at_a_revision(repo: Path) -> None:
    (repo / "bin.py").write_bytes(b"x = '\xff'\n")
    git(repo, "add", "bin.py")
    git(repo, "commit", "-q", "-m", "binary")
    assert (
        gitinfo.texts_at(repo, None, ["bin.py"])
        == gitinfo.texts_at(repo, "HEAD", ["bin.py"])
        == {"bin.py": "x = '\ufffd'\n"}
    )


def test_an_unknown_revision_is_an_error(repo: Path) -> None:
    with pytest.raises(GitError, match="git rev-parse --verify --quiet nope\\^\\{commit\\} failed in "):
        gitinfo.file_at(repo, "nope", "a.txt")


def test_the_merge_base_of_a_branch(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "a.txt").write_text("topic\n")
    git(repo, "commit", "-q", "-am", "topic")
    git(repo, "checkout", "-q", "main")
    (repo / "d.txt").write_text("main\n")
    git(repo, "add", "d.txt")
    git(repo, "commit", "-q", "-m", "main moves on")
    git(repo, "checkout", "-q", "topic")
    assert gitinfo.merge_base(repo, "main") == base


def test_name_status_of_the_work_tree_and_of_a_commit(repo: Path) -> None:
    (repo / "sub").mkdir()
    (repo / "sub" / "long.txt").write_text("".join(f"line {n}\n" for n in range(20)))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "second")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "mv", "sub/long.txt", "sub/moved.txt")
    (repo / "a.txt").unlink()
    git(repo, "commit", "-q", "-am", "third")
    (repo / "sub" / "new.txt").write_text("untracked\n")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "x.txt").write_text("ignored\n")
    status = gitinfo.NameStatus
    committed = (status("D", "a.txt"), status("R", "sub/moved.txt", "sub/long.txt"))
    assert gitinfo.name_status(repo, base, "HEAD") == committed
    assert gitinfo.name_status(repo, base) == (*committed, status("A", "sub/new.txt"))  # untracked, not ignored
    # Below the top: the folder's changes only, relative to it (as changed_since names them).
    assert gitinfo.name_status(repo / "sub", base) == (status("R", "moved.txt", "long.txt"), status("A", "new.txt"))


def test_the_commit_a_revision_names(repo: Path, tmp_path: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "branch", "side")
    assert (gitinfo.commit_of(repo), gitinfo.commit_of(repo, "side")) == (head, head)
    assert gitinfo.commit_of(tmp_path) is None  # outside a checkout (repo/ is below it)
    with pytest.raises(GitError, match="git rev-parse --verify --quiet nope\\^\\{commit\\} failed in "):
        gitinfo.commit_of(repo, "nope")
