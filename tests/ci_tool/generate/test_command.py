"""`ci-tool generate [--check]` through the real entry point, in a scratch repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.generate.targets import TARGETS
from ci_tool.layout import BOT_DOCS_PATH

CATALOGS = Path(__file__).resolve().parent / "catalogs"
ROOT = Path(__file__).resolve().parents[3]
PATHS = [target.path for target in TARGETS]
COUNT = f"{len(PATHS)} generated files are up to date\n"


def golden(path: str) -> str:
    """The bot's reference is the committed docs/bot.md for every catalog; the CI files are the small catalog's."""
    return (ROOT / path if path == BOT_DOCS_PATH else CATALOGS / "small" / "expected" / Path(path).name).read_text()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch repository root holding the `small` golden catalog and its test-db."""
    (tmp_path / "jenkins").mkdir()
    shutil.copy(CATALOGS / "small" / "stages.yml", tmp_path / "jenkins" / "stages.yml")
    shutil.copytree(CATALOGS / "test-db", tmp_path / "test-db")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)  # what the stages install: the goldens render this repository's
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["generate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_generate_writes_every_target_then_leaves_fresh_files_alone(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrote = "".join(f"wrote {path}\n" for path in PATHS) + f"wrote {len(PATHS)} of {len(PATHS)} generated files\n"
    assert run(capsys) == (0, wrote, "")
    assert {path: (repo / path).read_text() for path in PATHS} == {path: golden(path) for path in PATHS}
    assert run(capsys) == (0, COUNT, "")


def test_check_passes_on_fresh_files(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys)
    assert run(capsys, "--check") == (0, COUNT, "")


def test_check_names_each_stale_file_with_its_diff_and_exits_1(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys)
    catalog = repo / "jenkins" / "stages.yml"
    catalog.write_text(catalog.read_text().replace("timeout_minutes: 90", "timeout_minutes: 95"))
    code, out, err = run(capsys, "--check")
    assert code == 1
    # the workflow asks ci-tool for each stage's timeout when it runs: only Jenkins' table holds it
    assert err == "error: jenkins/L0_Test.groovy is stale; run `ci-tool generate`\n"
    assert out.startswith("--- a/jenkins/L0_Test.groovy\n+++ b/jenkins/L0_Test.groovy\n@@ ")
    changed = [line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    # the stage's row, then its `-cbts` row (a narrowed shard runs with its family's timeout)
    assert [line[:1] for line in changed] == ["-", "+", "-", "+"]
    assert all("timeoutMinutes: 90," in line for line in changed[::2])
    assert all("timeoutMinutes: 95," in line for line in changed[1::2])
    stage = "H100_PCIe-PyTorch-Perf-1"
    assert [line.split("'")[1] for line in changed[::2]] == [stage, f"{stage}-cbts"]


def test_check_reports_a_hand_edit(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys)
    workflow = repo / ".github" / "workflows" / "l0-test.yml"
    workflow.write_text(workflow.read_text().replace("timeout-minutes: 5", "timeout-minutes: 50"))
    code, out, err = run(capsys, "--check")
    assert (code, err) == (1, "error: .github/workflows/l0-test.yml is stale; run `ci-tool generate`\n")
    assert "-    timeout-minutes: 50\n+    timeout-minutes: 5\n" in out


def test_check_reports_a_missing_file(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys)
    (repo / "jenkins" / "L0_MergeRequest.groovy").unlink()
    code, out, err = run(capsys, "--check")
    assert (code, err) == (1, "error: jenkins/L0_MergeRequest.groovy is missing; run `ci-tool generate`\n")
    assert out.startswith("--- a/jenkins/L0_MergeRequest.groovy\n+++ b/jenkins/L0_MergeRequest.groovy\n@@ -0,0 +1,")


def test_check_writes_nothing(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "--check")[0] == 1
    assert [path for path in PATHS if (repo / path).exists()] == []


def test_a_catalog_error_is_reported_with_its_place(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = repo / "jenkins" / "stages.yml"
    catalog.write_text(catalog.read_text().replace("context: l0_x", "context: l0_y", 1))
    code, out, err = run(capsys, "--check")
    assert (code, out) == (1, "")
    assert err.startswith("error: jenkins/stages.yml:")
    assert "expected a context defined in the test-db, found no context 'l0_y'" in err


def test_other_paths_for_the_catalog_and_test_db(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "jenkins" / "stages.yml").rename(repo / "catalog.yml")
    (repo / "test-db").rename(repo / "lists")
    code, _, err = run(capsys, "--catalog", "catalog.yml", "--test-db", "lists")
    assert (code, err) == (0, "")
    assert (
        (repo / "jenkins" / "L0_Test.groovy")
        .read_text()
        .startswith("// Generated by `ci-tool generate` from jenkins/stages.yml; do not edit.")
    )


def test_generate_names_an_overwritten_hand_edit_with_its_diff(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys)
    workflow = repo / ".github" / "workflows" / "l0-test.yml"
    workflow.write_text(workflow.read_text().replace("timeout-minutes: 5", "timeout-minutes: 50"))
    code, out, err = run(capsys)
    assert (code, err) == (0, "")
    assert out.startswith(
        "wrote .github/workflows/l0-test.yml, replacing 1 of its lines with 1 (diff: - was there, + is new)\n"
        "--- a/.github/workflows/l0-test.yml\n+++ b/.github/workflows/l0-test.yml\n@@ "
    )
    assert out.endswith(f"\nwrote 1 of {len(PATHS)} generated files; the other {len(PATHS) - 1} were up to date\n")
    assert "-    timeout-minutes: 50\n+    timeout-minutes: 5\n" in out
    assert workflow.read_text() == (CATALOGS / "small" / "expected" / "l0-test.yml").read_text()


def test_generate_counts_removed_and_added_lines(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys)
    pipeline = repo / "jenkins" / "L0_Test.groovy"
    pipeline.write_text("-- a hand-written first line\n" + pipeline.read_text() + "// two\n// more\n")
    out = run(capsys)[1]
    assert out.splitlines()[0] == (
        "wrote jenkins/L0_Test.groovy, replacing 3 of its lines with 0 (diff: - was there, + is new)"
    )


def test_generate_says_the_project_needs_a_pyproject(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "pyproject.toml").unlink()
    assert run(capsys) == (
        1, "", "error: pyproject.toml: expected the project's pyproject.toml, found no file Hint: the generated "
        "pipelines build the project with pip: its pyproject.toml names it ([project] name) and what the stages "
        "install with it ([tool.ci-tool.build])\n",
    )  # fmt: skip
    assert not (repo / ".github").exists()  # nothing written
