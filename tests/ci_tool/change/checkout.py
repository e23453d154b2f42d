"""A real git checkout of a pull request for the commands that read a change (`--base main --head pr`): branch
`main` with one commit, branch `pr` on it adding or changing the given files."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def pull_request_checkout(root: Path, changed: Mapping[str, str], *, at_base: Mapping[str, str] | None = None) -> Path:
    """`root` as a git checkout whose branch `pr` writes `changed` (path -> text) over `main`, which holds
    `at_base` (default: one README); `pr` is checked out."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    for path, text in (at_base or {"README.md": "# base\n"}).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "pr")
    for path, text in changed.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the pull request")
    return root
