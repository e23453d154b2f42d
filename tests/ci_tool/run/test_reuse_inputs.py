"""Reuse matches what a stage ran with, not only its code: a stage that passed on a commit with another
test-db does not stand in for the real stage (`stage run`, `stage select`; the tests it passed still skip); and
`stage select --head REF` reuses what passed on REF's commit and records REF's commit, whatever commit the
checkout holds. Real runs in a git checkout of the failing suite (test_reuse_cli.py's)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.outcomes import StageState
from tests.helpers.reuse_cli import ci_tool, git, make_checkout, runs, stage_run, stage_states


@pytest.fixture
def checkout(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The failing suite with the reuse catalog, committed in a fresh git repository."""
    return make_checkout(suite, monkeypatch)


__all__ = ["checkout"]  # the fixture

# CPU-Generic as reuse.yml has it, over a test-db whose l0_green holds one test of the suite's six: a pass of
# CPU-Generic-1 with these proves nothing of the real one.
SMALL_CATALOG = "version: 1\nfamilies:\n- {name: CPU-Generic, platform: cpu, context: l0_green, splits: 1}\n"
SMALL_DB = "version: 0.0.1\nl0_green:\n- condition: {}\n  tests: [cases/case_basic.py::test_pass]\n"
SMALL = ("--catalog", "small.yml", "--test-db", "small-db")


@pytest.fixture
def small_db(checkout: Path) -> Path:
    """A committed second catalog and test-db, whose CPU-Generic-1 runs one test."""
    (checkout / "small-db").mkdir()
    (checkout / "small-db" / "l0_small.yml").write_text(SMALL_DB)
    (checkout / "small.yml").write_text(SMALL_CATALOG)
    git(checkout, "add", "small-db", "small.yml")
    git(checkout, "commit", "-q", "-m", "a small test-db")
    return checkout / "small-db"


def test_a_pass_with_another_test_db_does_not_stand_in_for_the_stage(
    small_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first_code, first_out = ci_tool(capsys, *stage_run("CPU-Generic-1", *SMALL))
    assert first_code == 0, first_out
    code, out = ci_tool(capsys, *stage_run("CPU-Generic-1"))
    (_, first), (_, second) = runs(small_db.parent)
    assert code == 0, out
    assert "reuse: 1 test of CPU-Generic-1 passed on commit " in out  # it skips; the stage runs the others
    assert stage_states(second) == {"CPU-Generic-1": (StageState.PASSED, "")}
    assert (first[0].passed, second[0].passed, second[0].skipped) == (1, 3, 1)


def test_the_selection_does_not_reuse_a_pass_with_another_test_db(
    small_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_tool(capsys, *stage_run("CPU-Generic-1", *SMALL))
    (small_db.parent / "request.json").write_text('{"command": "run", "flags": {}}')
    code, out = ci_tool(capsys, "stage", "select", "--request", "request.json", "--catalog", "reuse.yml")
    assert code == 0
    assert "+ CPU-Generic-1  (step 1: " in out


def test_the_selection_for_head_reuses_what_passed_on_its_commit_not_the_checkouts(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = git(checkout, "rev-parse", "HEAD").strip()
    ci_tool(capsys, *stage_run("CPU-Generic-1", "--base", head))  # as a pull request's stage runs on its head
    ((passed, _),) = runs(checkout)
    git(checkout, "commit", "-q", "--allow-empty", "-m", "the checkout moves on")
    moved = git(checkout, "rev-parse", "HEAD").strip()
    ci_tool(capsys, *stage_run("CPU-Generic-Group-1", "--disable-reuse-test"))  # passed on the checkout only
    (checkout / "request.json").write_text('{"command": "run", "flags": {}}')
    select = ("stage", "select", "--request", "request.json", "--catalog", "reuse.yml", "--base", head, "--head", head)
    code, out = ci_tool(capsys, *select)
    _, record = ci_tool(capsys, *select, "--json")
    assert code == 0 and moved != head
    assert f"- CPU-Generic-1  (step 18: reused from run {passed.run_id})" in out
    assert "+ CPU-Generic-Group-1  (step 1: " in out
    assert json.loads(record)["head"] == head
