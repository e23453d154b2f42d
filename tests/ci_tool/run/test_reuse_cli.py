"""Reuse through `ci-tool run`, in a git checkout of the failing suite: a second run of the same code and
request reruns nothing that passed, a failed stage reruns only its tests that did not pass, and any change
of the code (or --disable-reuse-test) runs everything again."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.bot.grammar import parse_comment
from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.report.words import seconds_text
from ci_tool.run.session import new_run_id
from tests.helpers.reuse_cli import (
    CATALOG,
    CPU_ONLY,
    TEST_DB,
    ci_tool,
    git,
    make_checkout,
    runs,
    stage_run,
    stage_states,
)


@pytest.fixture
def checkout(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The failing suite with the reuse catalog, committed in a fresh git repository."""
    return make_checkout(suite, monkeypatch)


RUN = ("run", "/bot run --disable-fail-fast", "--catalog", "reuse.yml", *CPU_ONLY)












def test_a_second_identical_run_reuses_every_passed_stage_and_the_passed_tests_of_the_failed_one(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first_code, first_out = ci_tool(capsys, *RUN)
    code, out = ci_tool(capsys, *RUN)
    (first, _), (second, second_stages) = runs(checkout)
    assert (first_code, code) == (1, 1)  # the failing test fails again: reuse never hides a failure
    assert "reuse: none (no history yet at .ci-tool/history.sqlite)" in first_out
    assert f"reuse: run {first.run_id} (commit {first.code_commit[:12]} (clean), failed): 2 passed stages, " in out
    assert (second.code_commit, second.code_diff, second.scope) == (first.code_commit, "", "{}")
    assert stage_states(second_stages) == {
        "CPU-Generic-1": (StageState.REUSED, f"reused from run {first.run_id}"),
        "CPU-Generic-Group-1": (StageState.REUSED, f"reused from run {first.run_id}"),
        "CPU-Generic-Mixed-1": (StageState.FAILED, ""),
    }
    with HistoryStore(checkout / ".ci-tool" / "history.sqlite", read_only=True) as store:
        mixed = queries.stage_tests(store, second.run_id, "CPU-Generic-Mixed-1")
    reused = f"Reused from run {first.run_id}"
    assert sorted((t.test_id, t.outcome, t.waive_reason or "") for t in mixed) == [
        ("cases/case_basic.py::TestGroup::test_alpha", TestOutcome.SKIPPED, reused),
        ("cases/case_basic.py::TestGroup::test_beta", TestOutcome.SKIPPED, reused),
        ("cases/case_basic.py::test_assert_fails", TestOutcome.FAILED, ""),
        ("cases/case_basic.py::test_pass", TestOutcome.SKIPPED, reused),
        ("cases/case_params.py::test_half[e f]", TestOutcome.PASSED, ""),
        ("cases/case_params.py::test_half[g h]", TestOutcome.FAILED, ""),
        ("cases/case_params.py::test_spaced[a b]", TestOutcome.SKIPPED, reused),
        ("cases/case_params.py::test_spaced[c d]", TestOutcome.SKIPPED, reused),
    ]
    assert f"- `{reused}`: 5 tests that passed there" in out
    assert f"| `CPU-Generic-1` | reused (`reused from run {first.run_id}`) | – | – | – | – |" in out
    assert f"- `CPU-Generic-1`: `reused from run {first.run_id}`" in out
    assert not (checkout / ".ci-tool" / "runs" / second.run_id / "CPU-Generic-1").exists()  # nothing ran
    assert "CPU-Generic-1: passed in " in first_out


def test_a_third_run_reuses_from_where_the_stages_passed(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(3):
        ci_tool(capsys, *RUN)
    (first, _), _, (_, third_stages) = runs(checkout)
    assert stage_states(third_stages)["CPU-Generic-1"] == (StageState.REUSED, f"reused from run {first.run_id}")


def test_disable_reuse_test_runs_everything(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ci_tool(capsys, *RUN)
    _, out = ci_tool(capsys, "run", "/bot run --disable-fail-fast --disable-reuse-test", "--catalog", "reuse.yml",
                     *CPU_ONLY)  # fmt: skip
    _, (_, stages) = runs(checkout)
    assert "reuse: off (--disable-reuse-test): every stage runs" in out
    assert {name: state for name, (state, _) in stage_states(stages).items()} == {
        "CPU-Generic-1": StageState.PASSED,
        "CPU-Generic-Mixed-1": StageState.FAILED,
        "CPU-Generic-Group-1": StageState.PASSED,
    }


def test_a_code_change_runs_everything_again(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ci_tool(capsys, *RUN)
    (checkout / "cases" / "case_new.py").write_text("def test_new():\n    pass\n")  # untracked counts
    _, out = ci_tool(capsys, *RUN)
    (first, _), (second, stages) = runs(checkout)
    assert (second.code_commit, bool(second.code_diff)) == (first.code_commit, True)
    assert "reuse: none (no earlier run of commit " in out and " + uncommitted changes " in out
    assert StageState.REUSED not in {stage.state for stage in stages}


def test_a_named_run_of_other_code_is_ignored(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ci_tool(capsys, *RUN)
    (first, _), = runs(checkout)  # fmt: skip
    git(checkout, "commit", "-q", "--allow-empty", "-m", "another commit")
    _, out = ci_tool(capsys, "run", f"/bot run --disable-fail-fast --reuse-test {first.run_id}", "--catalog",
                     "reuse.yml", *CPU_ONLY)  # fmt: skip
    assert f"reuse: none (--reuse-test {first.run_id} tested commit {first.code_commit[:12]} (clean); this is " in out
    assert out.count(": the code changed)") == 1


def test_another_request_is_another_scope(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ci_tool(capsys, *RUN)
    _, out = ci_tool(capsys, "run", '/bot run --stage-list "CPU-Generic-1"', "--catalog", "reuse.yml", *CPU_ONLY)
    assert "reuse: none (no earlier run of commit " in out and "with this request)" in out


def test_outside_a_git_checkout_reuse_is_off(suite: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    (suite / "reuse.yml").write_text(CATALOG)
    (suite / "test-db" / "l0_reuse.yml").write_text(TEST_DB)
    monkeypatch.chdir(suite)
    _, out = ci_tool(capsys, *RUN)
    assert "reuse: off (not a git checkout: the code a run tests cannot be told apart)" in out


def test_reuse_pipeline_records_a_run_passed_by_reuse(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    green = ("--catalog", "reuse.yml", *CPU_ONLY)
    green_db = TEST_DB.replace("  - cases/case_basic.py::test_assert_fails\n", "").replace(
        "case_params.py", "case_params.py::test_spaced"
    )
    (checkout / "test-db" / "l0_reuse.yml").write_text(green_db)
    git(checkout, "commit", "-q", "-am", "green")
    code, _ = ci_tool(capsys, "run", "/bot run", *green)
    again, out = ci_tool(capsys, "run", "/bot reuse-pipeline", *green)
    _, (second, stages) = runs(checkout)
    assert (code, again, second.command, second.state, second.scope) == (0, 0, "/bot reuse-pipeline", "passed", "{}")
    assert {stage.state for stage in stages} == {StageState.REUSED}
    assert out.splitlines()[-1] == "0 passed, 0 failed, 0 skipped"


def test_reuse_pipeline_without_a_passed_run_is_an_error(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "/bot reuse-pipeline", "--catalog", "reuse.yml", *CPU_ONLY])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("error: expected an earlier run of this code that passed, found none (reuse: none (")


def test_a_run_id_is_an_id_reuse_test_takes() -> None:
    run_id = new_run_id()
    assert parse_comment(f"/bot run --reuse-test {run_id}").selection_request().reuse_test == run_id


def test_a_run_given_the_target_branch_runs_with_its_waives(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stale branch: main has waived the failing tests since; `--base main` merges main's waives in."""
    git(checkout, "checkout", "-q", "-b", "pr")
    git(checkout, "checkout", "-q", "main")
    waives = checkout / "test-db" / "waives.txt"
    waives.write_text("cases/case_basic.py::test_assert_fails SKIP (bug 1)\ncases/case_params.py::test_half SKIP (2)\n")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "main waives the failures")
    git(checkout, "checkout", "-q", "pr")
    mixed = ("run", '/bot run --disable-reuse-test --stage-list "CPU-Generic-Mixed-1"', *RUN[2:])
    stale, _ = ci_tool(capsys, *mixed)
    code, out = ci_tool(capsys, *mixed, "--base", "main")
    assert (stale, code) == (1, 0)
    assert "merged waives: 2 line(s) added from main, 0 left out that this change removes\n" in out
    assert "- `bug 1`: `cases/case_basic.py::test_assert_fails`" in out


def main_waives_the_failures(checkout: Path) -> str:
    """A stale branch `pr`, checked out: main has waived the failing tests since. Main's tip."""
    git(checkout, "checkout", "-q", "-b", "pr")
    git(checkout, "checkout", "-q", "main")
    waives = checkout / "test-db" / "waives.txt"
    waives.write_text("cases/case_basic.py::test_assert_fails SKIP (bug 1)\ncases/case_params.py::test_half SKIP (2)\n")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "main waives the failures")
    base = git(checkout, "rev-parse", "main").strip()
    git(checkout, "checkout", "-q", "pr")
    return base


MIXED_STAGE = ("stage", "run", "CPU-Generic-Mixed-1", "--catalog", "reuse.yml", *CPU_ONLY)


def test_a_stage_given_the_target_branch_runs_with_its_waives(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One stage, as the generated pipelines run it: `stage run --base REF` merges REF's waives in too."""
    base = main_waives_the_failures(checkout)
    stale, _ = ci_tool(capsys, *MIXED_STAGE)
    code, out = ci_tool(capsys, *MIXED_STAGE, "--base", base, "--disable-reuse-test")
    assert (stale, code) == (1, 0)
    assert f"merged waives: 2 line(s) added from {base}, 0 left out that this change removes\n" in out


def test_a_stage_of_reused_and_waived_tests_passes(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What passed before skips as reused, the failures as waived: the stage's tests ran (only not all in
    this run), where a stage whose every test is waived fails."""
    base = main_waives_the_failures(checkout)
    stale, _ = ci_tool(capsys, *MIXED_STAGE)
    code, out = ci_tool(capsys, *MIXED_STAGE, "--base", base)
    assert (stale, code) == (1, 0)
    assert "reuse: 6 tests of CPU-Generic-Mixed-1 passed on commit " in out
    assert "0 passed, 0 failed, 8 skipped" in out




def test_a_stage_that_passed_on_this_code_is_reused_by_the_next_stage_run(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first_code, _ = ci_tool(capsys, *stage_run("CPU-Generic-1"))
    code, out = ci_tool(capsys, *stage_run("CPU-Generic-1"))
    (first, _), (second, stages) = runs(checkout)
    assert (first_code, code) == (0, 0)
    assert (
        f"reuse: CPU-Generic-1 passed on commit {first.code_commit[:12]} (clean) in run {first.run_id}: it does not "
        "run again (--disable-reuse-test runs it)"
    ) in out
    assert stage_states(stages) == {"CPU-Generic-1": (StageState.REUSED, f"reused from run {first.run_id}")}
    assert (second.code_commit, second.code_diff) == (first.code_commit, "")


def test_a_failed_stage_runs_again_only_its_tests_that_did_not_pass(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_tool(capsys, *stage_run("CPU-Generic-Mixed-1"))
    code, out = ci_tool(capsys, *stage_run("CPU-Generic-Mixed-1"))
    (first, _), (second, _) = runs(checkout)
    assert code == 1
    assert f"reuse: 6 tests of CPU-Generic-Mixed-1 passed on commit {first.code_commit[:12]} (clean) (run " in out
    with HistoryStore(checkout / ".ci-tool" / "history.sqlite", read_only=True) as store:
        tests = queries.stage_tests(store, second.run_id, "CPU-Generic-Mixed-1")
    ran = sorted(t.test_id for t in tests if t.outcome is not TestOutcome.SKIPPED)
    assert ran == [
        "cases/case_basic.py::test_assert_fails",
        "cases/case_params.py::test_half[e f]",
        "cases/case_params.py::test_half[g h]",
    ]


def test_a_stage_that_passed_in_a_whole_run_is_reused_by_a_stage_run(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ci_tool(capsys, *RUN)
    code, out = ci_tool(capsys, *stage_run("CPU-Generic-Group-1"))
    (first, _), (_, stages) = runs(checkout)
    assert code == 0 and f"in run {first.run_id}: it does not run again" in out
    assert stage_states(stages) == {"CPU-Generic-Group-1": (StageState.REUSED, f"reused from run {first.run_id}")}


def test_disable_reuse_test_runs_the_stage_again(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ci_tool(capsys, *stage_run("CPU-Generic-1"))
    code, out = ci_tool(capsys, *stage_run("CPU-Generic-1", "--disable-reuse-test"))
    (_, _), (_, stages) = runs(checkout)
    assert code == 0 and "reuse: off (--disable-reuse-test): the stage runs" in out
    assert stage_states(stages) == {"CPU-Generic-1": (StageState.PASSED, "")}


def test_a_stage_run_of_changed_code_runs_again(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ci_tool(capsys, *stage_run("CPU-Generic-1"))
    (checkout / "cases" / "case_new.py").write_text("def test_new():\n    pass\n")  # untracked: code
    code, out = ci_tool(capsys, *stage_run("CPU-Generic-1"))
    (_, _), (_, stages) = runs(checkout)
    assert code == 0 and "reuse: none (no earlier run of CPU-Generic-1 on commit " in out
    assert stage_states(stages) == {"CPU-Generic-1": (StageState.PASSED, "")}


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        ("{}", "- CPU-Generic-1  (step 18: reused from run {run})"),
        ('{"disable_reuse_test": true}', "+ CPU-Generic-1  (step 1: "),
    ],
    ids=["reused", "disable-reuse-test"],
)
def test_the_selection_reuses_a_stage_that_passed_on_this_commit_in_a_stage_run_of_its_own(
    checkout: Path, capsys: pytest.CaptureFixture[str], flags: str, line: str
) -> None:
    """The plan job of a pipeline, whose stages ran on other agents: each a run of its own in one history."""
    ci_tool(capsys, *stage_run("CPU-Generic-1"))
    ((first, _),) = runs(checkout)
    (checkout / "request.json").write_text(f'{{"command": "run", "flags": {flags}}}')  # as the pipelines write it
    code, out = ci_tool(capsys, "stage", "select", "--request", "request.json", "--catalog", "reuse.yml")
    assert code == 0
    assert line.format(run=first.run_id) in out


def test_the_report_site_and_results_the_readme_writes_are_no_change_to_the_code(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/reports.md's `report --output report.html`, `site --output site/` and `stage run --output-dir out
    --html-report out/report.html` leave untracked files in the checkout: the next run reuses all the same,
    and a pull request's change (`--base`) holds none of them."""
    ci_tool(capsys, *RUN)
    assert ci_tool(capsys, "report", "latest", "--format", "html", "--output", "report.html")[0] == 0
    assert ci_tool(capsys, "site", "--output", "site/")[0] == 0
    stage = ("stage", "run", "CPU-Generic-1", "--catalog", "reuse.yml", *CPU_ONLY, "--disable-reuse-test")
    assert ci_tool(capsys, *stage, "--output-dir", "out", "--html-report", "out/report.html")[0] == 0
    assert {"report.html", "site", "out"} <= {path.name for path in checkout.iterdir()}
    _, out = ci_tool(capsys, *RUN)
    (first, _), _, (third, stages) = runs(checkout)
    assert (third.code_commit, third.code_diff) == (first.code_commit, "")
    assert f"reuse: run {first.run_id} (commit {first.code_commit[:12]} (clean), failed): " in out
    assert stage_states(stages)["CPU-Generic-1"] == (StageState.REUSED, f"reused from run {first.run_id}")
    git(checkout, "branch", "main-line")
    code, out = ci_tool(capsys, "run", "/bot run", "--catalog", "reuse.yml", *CPU_ONLY, "--base", "main-line",
                        "--plan-only")  # fmt: skip
    assert code == 0 and "no rule claims" not in out


def test_an_output_edited_since_is_code_again(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ci_tool(capsys, *RUN)
    ci_tool(capsys, "report", "latest", "--format", "html", "--output", "report.html")
    (checkout / "report.html").write_text("<p>my notes now</p>\n")
    _, out = ci_tool(capsys, *RUN)
    assert "reuse: none (no earlier run of commit " in out and " + uncommitted changes " in out


def test_the_report_of_a_run_passed_by_reuse_says_what_it_reused(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not `0 passed, 0 failed, 0 skipped · 0.0 s`: the counts and time of the stages where they ran."""
    green = ("--catalog", "reuse.yml", *CPU_ONLY)
    green_db = TEST_DB.replace("  - cases/case_basic.py::test_assert_fails\n", "").replace(
        "case_params.py", "case_params.py::test_spaced"
    )
    (checkout / "test-db" / "l0_reuse.yml").write_text(green_db)
    git(checkout, "commit", "-q", "-am", "green")
    ci_tool(capsys, "run", "/bot run", *green)
    _, printed = ci_tool(capsys, "run", "/bot reuse-pipeline", *green)  # the run's report.md, as it ends
    (first, stages), _ = runs(checkout)
    _, report = ci_tool(capsys, "report", "latest")
    passed, skipped = sum(s.passed for s in stages), sum(s.skipped for s in stages)
    took = seconds_text(sum(s.duration_seconds for s in stages))
    header = (
        f"`/bot reuse-pipeline` · 3 stages · 3 stages reused from run {first.run_id}: {passed} passed, 0 failed, "
        f"{skipped} skipped · {took} of stage time there"
    )
    assert (passed > 0, report.splitlines()[2], f"\n{header}\n" in printed) == (True, header, True)
