"""A pull request's change read from GitHub gets its touch records judged only in a clone that holds both of
its commits (the bot workflow fetches the head); without them the preview says why it judged none."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ci_tool.change.build import with_pull_request_touches
from ci_tool.change.value import ChangeSet

ABSENT = "f" * 40


def commit(root: Path) -> str:
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    (root / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], cwd=root, check=True)
    done = subprocess.run([*git, "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_a_head_this_clone_lacks_leaves_the_change_without_touch_evidence_and_says_so(tmp_path: Path) -> None:
    base = commit(tmp_path)
    change = ChangeSet(files=("a.py",), base={}, base_sha=base, head_sha=ABSENT, origin="the pull request's change")
    found = with_pull_request_touches(change, tmp_path / "history.sqlite", tmp_path)
    assert (found.touches, found.origin) == (
        None,
        f"the pull request's change (touch records not judged: this clone lacks {ABSENT[:12]})",
    )


def test_a_change_without_commits_is_left_as_it_is(tmp_path: Path) -> None:
    change = ChangeSet(files=("a.py",), origin="the changed-files list")
    assert with_pull_request_touches(change, tmp_path / "history.sqlite", tmp_path) is change
