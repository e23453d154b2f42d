"""Waive merge: the PR's waives, plus the target branch tip's, minus the lines the PR removed; pure, then
`ci-tool testdb merge-waives --base REF` in a real git checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.errors import TestDbError
from ci_tool.testdb.waive_merge import MERGED_HEADER, merge_waives

FILES = ("pr.txt", "tip.txt", "base.txt")
BASE = "a.py SKIP (1)\nb.py SKIP (2)\n"


# pr, tip -> (added, dropped); the base is BASE
MERGES = {
    "the tip waives a new test": (BASE, BASE + "c.py SKIP (3)\n", ("c.py SKIP (3)",), ()),
    "the PR removed a waive the tip keeps": ("a.py SKIP (1)\n", BASE, (), ("b.py SKIP (2)",)),
    "the tip rewords a waive the PR holds": (BASE, "a.py SKIP (reworded)\nb.py SKIP (2)\n", (), ()),
    "the tip scopes a waive to one GPU": (BASE, BASE + "full:A10/a.py SKIP (A10)\n", ("full:A10/a.py SKIP (A10)",), ()),
    "comments and blanks of the tip stay behind": (BASE, "# a comment\n\n" + BASE, (), ()),
    "the tip unwaived what the PR keeps": (BASE, "a.py SKIP (1)\n", (), ()),
}


@pytest.mark.parametrize(("pr", "tip", "added", "dropped"), MERGES.values(), ids=MERGES.keys())
def test_merge(pr: str, tip: str, added: tuple[str, ...], dropped: tuple[str, ...]) -> None:
    merged = merge_waives(pr, tip, BASE, files=FILES)
    assert (merged.added, merged.dropped) == (added, dropped)
    assert merged.text == pr + (f"{MERGED_HEADER}\n" + "".join(f"{line}\n" for line in added) if added else "")


def test_a_pr_file_without_a_final_newline_gets_one_before_the_merged_lines() -> None:
    merged = merge_waives("a.py SKIP (1)", "c.py SKIP (3)\n", "", files=FILES)
    assert merged.text == f"a.py SKIP (1)\n{MERGED_HEADER}\nc.py SKIP (3)\n"


def test_a_malformed_tip_line_is_an_error_naming_the_tip() -> None:
    with pytest.raises(TestDbError) as raised:
        merge_waives(BASE, "c.py XFAIL (x)\n", BASE, files=FILES)
    assert str(raised.value).startswith("tip.txt:1:1: expected `<test id> SKIP (<reason>)`, found 'c.py XFAIL (x)'")


def git(root: Path, *args: str) -> None:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*command, *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def stale_branch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A branch `pr` that unwaived b.py, while `main` went on to waive c.py."""
    waives = tmp_path / "test-db" / "waives.txt"
    waives.parent.mkdir()
    waives.write_text(BASE)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "checkout", "-q", "-b", "pr")
    waives.write_text("a.py SKIP (1)\n")
    git(tmp_path, "commit", "-q", "-am", "unwaive b.py")
    git(tmp_path, "checkout", "-q", "main")
    waives.write_text(BASE + "c.py SKIP (3)\n")
    git(tmp_path, "commit", "-q", "-am", "waive c.py")
    git(tmp_path, "checkout", "-q", "pr")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_merge_waives_takes_the_tips_new_waives_and_honours_the_unwaive(
    stale_branch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["testdb", "merge-waives", "--base", "main"]) == 0
    out, err = capsys.readouterr()
    assert out == f"a.py SKIP (1)\n{MERGED_HEADER}\nc.py SKIP (3)\n"
    assert err == "merged waives: 1 line(s) added from main, 1 left out that this change removes\n"


def test_merge_waives_writes_the_output_file(stale_branch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["testdb", "merge-waives", "--base", "main", "--output", "merged.txt"]) == 0
    assert (stale_branch / "merged.txt").read_text() == f"a.py SKIP (1)\n{MERGED_HEADER}\nc.py SKIP (3)\n"


def test_an_unknown_base_is_a_one_line_error(stale_branch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["testdb", "merge-waives", "--base", "origin/nope"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: git merge-base origin/nope HEAD failed in ")
    assert err.endswith("Hint: fetch the target branch first (git fetch origin BRANCH) or name an existing ref\n")
    assert len(err.splitlines()) == 1
