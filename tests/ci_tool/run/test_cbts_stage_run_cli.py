"""`ci-tool stage run <family>-<K>-cbts --selection FILE`, as the generated pipelines' stage jobs run a stage
that change-based selection narrowed, in a real git checkout of a pull request: it runs the list the plan's
run record holds (never a narrowing of its own), under the name, inputs digest and reuse a local `ci-tool run`
of the same change gives it, and refuses to run without the record, or with one that does not name it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import StageState, TestOutcome

NARROWED = "CPU-Generic-1-cbts"
CATALOG = """\
version: 1
change_rules:
  tests: [tests/]
families:
- {name: CPU-Generic, platform: cpu, context: l0_cpu, splits: 3}
"""
TEST_DB = """\
version: 0.0.1
l0_cpu:
- condition: {}
  tests:
  - tests/unit
  - tests/tools/test_cli.py
  - tests/slow/test_big.py
"""
TESTS = {
    "tests/unit/test_a.py": "def test_a():\n    pass\n",
    "tests/tools/test_cli.py": "def test_cli():\n    pass\n\n\ndef test_cli_help():\n    pass\n",
    "tests/slow/test_big.py": "def test_big():\n    pass\n",
}


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pull request `pr` that edits one test file (the tests rule narrows CPU-Generic to it) off `main`."""
    root = tmp_path / "repo"
    (root / "jenkins").mkdir(parents=True)
    (root / "jenkins" / "stages.yml").write_text(CATALOG)
    (root / "test-db").mkdir()
    (root / "test-db" / "l0_cpu.yml").write_text(TEST_DB)
    (root / "test-db" / "waives.txt").write_text("")
    for path, text in TESTS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / ".gitignore").write_text(".ci-tool/\n__pycache__/\nresults/\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "main")
    git(root, "checkout", "-q", "-b", "pr")
    (root / "tests" / "tools" / "test_cli.py").write_text(TESTS["tests/tools/test_cli.py"] + "\n# reworded\n")
    git(root, "commit", "-q", "-am", "the pull request")
    monkeypatch.chdir(root)
    return root


def ci_tool(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def plan(capsys: pytest.CaptureFixture[str], folder: Path, *flags: str) -> Path:
    """The plan's run record, as a pipeline's plan job writes it (outside the checkout: it is no code)."""
    request = folder / "request.json"
    request.write_text(json.dumps({"command": "run", "flags": dict.fromkeys(flags, True)}))
    code, out, err = ci_tool(capsys, "stage", "select", "--request", str(request), "--base", "main", "--json")
    assert code == 0, err
    record = folder / "selection.json"
    record.write_text(out)
    return record


def stage_rows(root: Path) -> list[tuple[str, StageState, str, list[str]]]:
    """Every recorded stage, oldest run first: its name, state, inputs digest and the tests that ran."""
    with HistoryStore(root / ".ci-tool" / "history.sqlite", read_only=True) as store:
        found = []
        for run in reversed(queries.recent_runs(store)):
            for stage in queries.run_stages(store, run.run_id):
                ((digest,),) = store.rows(
                    "SELECT inputs_digest FROM stages WHERE run_id = ? AND name = ?", (run.run_id, stage.name)
                )
                tests = queries.stage_tests(store, run.run_id, stage.name)
                ran = sorted(test.test_id for test in tests if test.outcome is TestOutcome.PASSED)
                found.append((stage.name, stage.state, str(digest), ran))
        return found


def test_the_stage_job_runs_what_the_plan_narrowed_as_a_local_run_runs_it(
    checkout: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The local run narrows CPU-Generic to the edited file (one -cbts shard); the stage job given the plan's
    record runs the same stage with the same inputs digest, so it reuses the local run's pass; with reuse off
    it runs the same tests."""
    record = plan(capsys, tmp_path)
    assert json.loads(record.read_text())["stages"] == [NARROWED]
    code, _, err = ci_tool(capsys, "run", "--base", "main")
    assert code == 0, err
    code, out, err = ci_tool(capsys, "stage", "run", NARROWED, "--selection", str(record), "--base", "main")
    assert code == 0, err
    code, _, err = ci_tool(capsys, "stage", "run", NARROWED, "--selection", str(record), "--base", "main",
                           "--disable-reuse-test")  # fmt: skip
    assert code == 0, err
    (local, reused, again) = stage_rows(checkout)
    cli_tests = ["tests/tools/test_cli.py::test_cli", "tests/tools/test_cli.py::test_cli_help"]
    assert (local[0], local[1], local[3]) == (NARROWED, StageState.PASSED, cli_tests)
    assert (reused[0], reused[1]) == (NARROWED, StageState.REUSED) and "it does not run again" in out
    assert (again[0], again[1], again[3]) == (NARROWED, StageState.PASSED, cli_tests)
    assert local[2] and local[2] == reused[2] == again[2]


def test_the_stage_job_never_narrows_again_whatever_the_change_is_by_then(
    checkout: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The record decides: an uncommitted edit of another test file (which a new selection would add) changes
    nothing of what the stage runs."""
    record = plan(capsys, tmp_path)
    (checkout / "tests" / "slow" / "test_big.py").write_text(TESTS["tests/slow/test_big.py"] + "# edited\n")
    code, out, err = ci_tool(capsys, "stage", "run", NARROWED, "--selection", str(record), "--dry-run")
    assert code == 0, err
    listed = [line.strip() for line in out.splitlines() if line.startswith("  tests/")]
    assert listed == ["tests/tools/test_cli.py"]


def test_a_cbts_stage_without_its_record_is_refused_with_the_way_to_give_it(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ci_tool(capsys, "stage", "run", NARROWED) == (
        1,
        "",
        f"error: {NARROWED}: expected --selection FILE with a -cbts stage, found none: it runs the list its plan's "
        "change-based selection narrowed Hint: pass the run record of the plan that selected it: `ci-tool stage "
        "select --request R --base REF --json > selection.json`, then `--selection selection.json` (the generated "
        "pipelines pass theirs)\n",
    )


def test_a_record_that_does_not_run_the_stage_is_refused(
    checkout: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = plan(capsys, tmp_path, "disable_cbts")  # the full set: no -cbts stage
    code, out, err = ci_tool(capsys, "stage", "run", NARROWED, "--selection", str(record))
    assert (code, out) == (1, "")
    assert err == (
        f"error: {record} (stages): expected '{NARROWED}' among the stages the selection runs, found it missing "
        "(its -cbts stages: none) Hint: run a stage of this selection, or select again for this change "
        "(`ci-tool stage select --json`)\n"
    )


def test_a_record_of_another_commit_is_refused(
    checkout: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = plan(capsys, tmp_path)
    main_tip = git(checkout, "rev-parse", "main")
    record.write_text(record.read_text().replace(git(checkout, "rev-parse", "HEAD"), main_tip))
    code, _, err = ci_tool(capsys, "stage", "run", NARROWED, "--selection", str(record))
    head = git(checkout, "rev-parse", "HEAD")
    assert (code, err) == (
        1,
        f"error: {record} (head): expected the commit this checkout tests, {head}, found {main_tip} Hint: run the "
        "stage on the commit its plan selected on, or select again on this one\n",
    )


def test_a_shard_beyond_the_records_narrowing_is_refused(
    checkout: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record = plan(capsys, tmp_path)
    data = json.loads(record.read_text())
    data["stages"].append("CPU-Generic-2-cbts")  # a record edited by hand: the family still narrows to 1 shard
    record.write_text(json.dumps(data))
    code, _, err = ci_tool(capsys, "stage", "run", "CPU-Generic-2-cbts", "--selection", str(record))
    assert (code, err) == (
        1,
        f"error: {record} (cbts.families.CPU-Generic.shards): expected at least shard 2 of 'CPU-Generic-2-cbts', "
        "found 1\n",
    )


def test_a_shard_option_with_a_cbts_stage_is_a_usage_error(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = ci_tool(capsys, "stage", "run", NARROWED, "--shard", "1")
    assert code == 2 and f"{NARROWED} names its shard; drop --shard 1" in err
