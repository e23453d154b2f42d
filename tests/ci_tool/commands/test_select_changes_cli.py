"""`ci-tool stage select --base REF [--head REF]` in a real git checkout: what change-based selection
makes of a pull request's change, and why (the change's test-db files are read at the merge base)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ci_tool.cli import main

CATALOG = Path(__file__).parents[1] / "stages" / "catalogs" / "cbts"
GPU_STAGES = ("A10-PyTorch-1", "A10-PyTorch-2", "DGX_H100-PyTorch-1")


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The small CBTS catalog committed on `main`, with a pull-request branch `pr` checked out."""
    root = tmp_path / "repo"
    shutil.copytree(CATALOG, root)
    (root / "request.json").write_text(json.dumps({"command": "run", "flags": {}}))
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n")
    (root / "src").mkdir()
    (root / "src" / "pool.py").write_text("def alloc():\n    return 1\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "pr")
    monkeypatch.chdir(root)
    return root


def select(capsys: pytest.CaptureFixture[str], root: Path, *extra: str) -> tuple[int, str]:
    code = main(["stage", "select", "--request", "request.json", "--catalog", "stages.yml", "--base", "main", *extra])
    return code, capsys.readouterr().out


def selected(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("+ ")]


def commit_change(root: Path, path: str, text: str) -> None:
    (root / path).write_text(text)
    git(root, "commit", "-q", "-am", f"change {path}")


def test_a_waive_only_change_selects_no_gpu_stage_and_says_why(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    waives = checkout / "test-db" / "waives.txt"
    commit_change(checkout, "test-db/waives.txt", waives.read_text() + "tests/gpu_only SKIP (https://bugs.example/9)\n")
    code, out = select(capsys, checkout)
    assert (code, selected(out)) == (0, [])
    assert "step 16: test-db/waives.txt: waives rule: the change removes no waive: nothing to run\n" in out
    assert "step 16: change-based selection: noop (nothing to test)\n" in out


def test_an_unwaive_runs_the_unwaived_test_on_its_stages(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    waived = (checkout / "test-db" / "waives.txt").read_text()
    commit_change(checkout, "test-db/waives.txt", waived + "full:A10/tests/gpu_only SKIP (x)\n")
    git(checkout, "branch", "-f", "main")  # main now waives it; the pull request removes the waive
    commit_change(checkout, "test-db/waives.txt", waived)
    code, out = select(capsys, checkout)
    assert (code, selected(out)) == (0, ["A10-PyTorch-1-cbts"])
    assert "runs the 1 test(s) whose waives it removes (full:A10/tests/gpu_only)" in out


def test_a_docs_only_change_runs_the_docs_stage(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit_change(checkout, "docs/guide.md", "# Guide, again\n")
    code, out = select(capsys, checkout)
    assert (code, selected(out)) == (0, ["CPU-Build_Docs"])
    assert "step 16: docs/guide.md: docs rule: the docs stage checks it\n" in out
    assert f"- {GPU_STAGES[0]}  (step 16: change-based selection: the change touches none of its tests)" in out


def test_a_durations_only_change_runs_nothing(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit_change(checkout, "test-db/.test_durations", '{"tests/unit/test_a.py::test_one": 11.0}\n')
    code, out = select(capsys, checkout)
    assert (code, selected(out)) == (0, [])
    assert "step 16: test-db/.test_durations: out of scope: nothing to test\n" in out


def test_a_source_change_runs_the_full_set(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit_change(checkout, "src/pool.py", "def alloc():\n    return 2\n")
    code, out = select(capsys, checkout)
    assert code == 0
    assert set(GPU_STAGES) <= set(selected(out))
    assert "step 16: src/pool.py: no rule claims it\n" in out
    assert "step 16: change-based selection: the full set runs\n" in out


def test_uncommitted_changes_count(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (checkout / "docs" / "new.md").write_text("untracked\n")
    _, out = select(capsys, checkout)
    assert selected(out) == ["CPU-Build_Docs"]


@pytest.mark.parametrize("verb", [("stage", "select"), ("run",), ("bot", "plan", "/bot run")], ids=" ".join)
def test_a_changed_files_list_is_refused_with_a_hint_at_base_and_head(
    checkout: Path, capsys: pytest.CaptureFixture[str], verb: tuple[str, ...]
) -> None:
    """A list of paths was a third way to build the change (no renames, statuses or head texts): every job
    passes --base/--head now, and a list says so instead of selecting differently."""
    (checkout / "files.txt").write_text("src/pool.py\n")
    assert main([*verb, "--changed-files", "files.txt"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "Error: Invalid value for '--changed-files': expected the change as --base REF [--head REF], found a "
        "changed-files list (a list of paths is no longer read: the change comes from git, renames and removals "
        "included) Hint: pass --base <target branch> --head HEAD instead of `git diff --name-only` into a file"
    )


def test_disable_cbts_runs_the_full_set(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit_change(checkout, "docs/guide.md", "# Guide, again\n")
    (checkout / "request.json").write_text(json.dumps({"command": "run", "flags": {"disable_cbts": True}}))
    code, out = select(capsys, checkout)
    assert code == 0
    assert set(GPU_STAGES) <= set(selected(out))
    assert "step 16" not in out


def test_head_reads_the_committed_change_not_the_work_tree(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With --head HEAD only the committed change counts, whatever the work tree holds besides."""
    commit_change(checkout, "docs/guide.md", "# Guide, again\n")
    (checkout / "notes.txt").write_text("mine\n")  # untracked, not ignored: part of the work tree's change
    _, out = select(capsys, checkout)
    assert "step 16: notes.txt: no rule claims it\n" in out
    code, out = select(capsys, checkout, "--head", "HEAD")
    assert (code, selected(out)) == (0, ["CPU-Build_Docs"])


def test_what_a_pipeline_writes_into_the_checkout_is_no_change(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI writes files into its checkout before it selects (ci_tool/output_files.py): never a change, in the
    work tree either."""
    commit_change(checkout, "docs/guide.md", "# Guide, again\n")
    (checkout / "selection.json").write_text("{}\n")
    (checkout / "results" / "CPU-Generic-1").mkdir(parents=True)
    (checkout / "results" / "CPU-Generic-1" / "junit.xml").write_text("<testsuites/>\n")
    code, out = select(capsys, checkout)
    assert (code, selected(out), "no rule claims" in out) == (0, ["CPU-Build_Docs"], False)


def test_head_needs_base(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["stage", "select", "--request", "request.json", "--catalog", "stages.yml", "--head", "HEAD"])
    err = capsys.readouterr().err
    assert (code, err.splitlines()[-1]) == (2, "Error: --head needs --base: the change is measured from the merge "
                                               "base with it")  # fmt: skip
