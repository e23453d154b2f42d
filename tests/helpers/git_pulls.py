"""A real git repository served as a pull request by the GitHub fake: its pulls/N/files rows, compare and
contents computed by git itself (not by ci-tool), so a test can set what GitHub says against what ci-tool's
own git reading says."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ci_tool.generate.context import generate_input
from ci_tool.generate.targets import generate_files
from ci_tool.stages.catalog_load import open_catalog
from tests.helpers.fake_github import FakeGitHub, FakePull
from tests.helpers.generate import REPOSITORY_BUILD

_STATUS = {"A": "added", "M": "modified", "D": "removed", "T": "changed"}


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True).stdout


def _rev(root: Path, ref: str) -> str:
    return _git(root, "rev-parse", f"{ref}^{{commit}}").decode().strip()


def file_rows(root: Path, merge_base: str, head: str) -> list[dict[str, str]]:
    """GitHub's pulls/N/files rows for `merge_base..head`, as `git diff -M --name-status` finds them."""
    fields = _git(root, "diff", "--name-status", "-M", "-z", merge_base, head).decode().split("\0")
    rows: list[dict[str, str]] = []
    index = 0
    while index < len(fields) and fields[index]:
        letter = fields[index][0]
        if letter == "R":
            rows.append({"filename": fields[index + 2], "status": "renamed", "previous_filename": fields[index + 1]})
            index += 3
        else:
            rows.append({"filename": fields[index + 1], "status": _STATUS[letter]})
            index += 2
    return rows


def serve_pull(github: FakeGitHub, repository: str, number: int, root: Path, *, base: str, head: str) -> FakePull:
    """Pull request `number` of `repository` on the fake: `head` of the git repository at `root` proposed
    for branch `base`, with every blob of the merge base and the head readable through contents/."""
    base_sha, head_sha = _rev(root, base), _rev(root, head)
    merge_base = _git(root, "merge-base", base_sha, head_sha).decode().strip()
    github.compares[(repository, base_sha, head_sha)] = merge_base
    for sha in (merge_base, head_sha):
        for path in _git(root, "ls-tree", "-r", "-z", "--name-only", sha).decode().split("\0"):
            if path:
                github.contents[(repository, sha, path)] = _git(root, "show", f"{sha}:{path}")
    pull = FakePull(number, head_sha=head_sha, base_ref=base, base_sha=base_sha)
    pull.files = list(file_rows(root, merge_base, head_sha))
    return github.add_pull(repository, pull)


CBTS_CATALOG = Path(__file__).resolve().parents[1] / "ci_tool" / "stages" / "catalogs" / "cbts"
# Waived on `main`: a pull request that removes it unwaives a GPU test.
A10_WAIVE = "full:A10/tests/gpu_only SKIP (https://bugs.example/2)\n"
TEMPLATE_FILES = {
    ".gitignore": ".ci-tool/\n.venv/\n",
    "request.json": '{"command": "run", "flags": {}}',
    "docs/guide.md": "# Guide\n",
    "src/pool.py": "def alloc():\n    return 1\n",
    "tests/unit/test_a.py": "def test_one():\n    pass\n",
    "tests/engine/test_attention.py": "def test_attention():\n    pass\n",
    "tests/tools/test_cli.py": "def test_cli():\n    pass\n",
}


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout


# With multi_gpu=True: a multi-GPU family, pre-merge only when a change touches MULTI_GPU_PATH.
MULTI_GPU_PATH = "src/memory.py"
MULTI_GPU_STAGE = "DGX_H100-4_GPUs-PyTorch-1"
_MULTI_GPU_FAMILY = "- {name: DGX_H100-4_GPUs-PyTorch, platform: dgx-h100-x4, context: l0_gpu, splits: 1}\n"


def make_repository(root: Path, *, multi_gpu: bool = False) -> Path:
    """A checkout as the bot and CI see one, committed on `main`: the small change-based-selection catalog at
    its default place (jenkins/stages.yml) with the pipelines `ci-tool generate` writes for it, its test-db,
    a few tests, docs and sources, and (ignored) a `.venv/bin/ci-tool` that runs this ci-tool. `multi_gpu`
    adds a multi-GPU family and MULTI_GPU_PATH as its multi-GPU path."""
    shutil.copytree(CBTS_CATALOG / "test-db", root / "test-db")
    (root / "jenkins").mkdir()
    catalog = (CBTS_CATALOG / "stages.yml").read_text()
    if multi_gpu:
        catalog = catalog.replace("version: 1\n", f"version: 1\nmulti_gpu_paths: [{MULTI_GPU_PATH}]\n", 1)
        catalog += _MULTI_GPU_FAMILY
    (root / "jenkins" / "stages.yml").write_text(catalog)
    for path, text in TEMPLATE_FILES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    waives = root / "test-db" / "waives.txt"
    waives.write_text(waives.read_text() + A10_WAIVE)
    catalog = open_catalog(root / "jenkins" / "stages.yml", root / "test-db").catalog
    for target, text in generate_files(generate_input(catalog, REPOSITORY_BUILD)).items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (root / target).write_text(text)
    script = root / ".venv" / "bin" / "ci-tool"
    script.parent.mkdir(parents=True)
    # never the developer's history: this repository's own, unless the pipeline binds a shared one
    history = shlex.quote(str(root.parent / "history.sqlite"))
    line = f'CI_TOOL_HISTORY="${{CI_TOOL_HISTORY:-{history}}}" exec {shlex.quote(sys.executable)} -m ci_tool "$@"'
    script.write_text(f"#!/bin/sh\n{line}\n")
    script.chmod(0o755)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(root, "remote", "add", "origin", str(root))  # what the pipelines fetch the target branch from
    return root


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
