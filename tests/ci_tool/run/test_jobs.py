"""The non-test stages' jobs, for real: the docs stage's checks in a generated checkout, its link check on
small markdown files, and the package-sanity stage building this repository's wheel into a fresh environment."""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.outcomes import StageState, TestOutcome
from ci_tool.run.invocation import RunSettings
from ci_tool.run.jobs import SANITY_CHECK, broken_links, run_job
from ci_tool.stages.catalog_load import open_catalog

REPO = Path(__file__).parents[3]
HINT = "Hint: fix the path (it is relative to the markdown file's folder)"

# markdown -> the broken targets, by column
LINKS = {
    "a file beside it": ("[x](other.md)", []),
    "a folder above": ("[x](../README.md)", []),
    "an anchor of a file": ("[x](other.md#usage)", []),
    "a missing file": ("see [x](gone.md) now", [("gone.md", 9)]),
    "an image": ("![plot](img/plot.png)", [("img/plot.png", 9)]),
    "external and anchors": ("[a](https://x.example/y) [b](#usage) [c](mailto:a@b.c)", []),
    "a titled link": ('[x](gone.md "Gone")', [("gone.md", 5)]),
    "outside the checkout": ("[x](../../outside.md)", [("../../outside.md", 5)]),
    "code blocks are examples": ("```sh\n[x](gone.md)\n```", []),
}


@pytest.mark.parametrize(("text", "broken"), LINKS.values(), ids=LINKS.keys())
def test_broken_links(tmp_path: Path, text: str, broken: list[tuple[str, int]]) -> None:
    (tmp_path / "README.md").write_text("# top\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# other\n")
    (tmp_path / "docs" / "page.md").write_text(text + "\n")
    (tmp_path.parent / "outside.md").write_text("")
    assert broken_links(tmp_path / "docs" / "page.md", tmp_path) == [
        f"docs/page.md:1:{col}: expected the link {target!r} to name a file of the checkout, found none {HINT}"
        for target, col in broken
    ]


CATALOG = """\
version: 1
families:
- {name: CPU-Build_Docs, platform: cpu}
- {name: CPU-Generic, platform: cpu, context: l0_x, splits: 1}
"""


@pytest.fixture
def docs_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout whose generated files are fresh, and a README linking to its one doc."""
    (tmp_path / "jenkins").mkdir()
    (tmp_path / "jenkins" / "stages.yml").write_text(CATALOG)
    (tmp_path / "test-db").mkdir()
    (tmp_path / "test-db" / "l0_x.yml").write_text("version: 0.0.1\nl0_x:\n- tests: [tests/test_a.py]\n")
    (tmp_path / "README.md").write_text("See [the bot](docs/bot.md).\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')  # what the generated stages install
    monkeypatch.chdir(tmp_path)
    assert main(["generate"]) == 0
    return tmp_path


def docs_stage(root: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Run the docs stage: the exit code, and the output followed by the run's CI report."""
    code = main(["stage", "run", "CPU-Build_Docs", "--results-dir", "runs", "--history", "history.sqlite"])
    (report,) = (root / "runs").glob("*/report.md")
    return code, capsys.readouterr().out + report.read_text()


def test_the_docs_stage_passes_when_everything_is_fresh_and_linked(
    docs_checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = docs_stage(docs_checkout, capsys)
    assert code == 0, out
    assert "CPU-Build_Docs: passed" in out
    assert "3 passed, 0 failed, 0 skipped" in out  # generated, README.md's links, docs/bot.md's links


def test_the_docs_stage_fails_on_a_stale_generated_file_and_a_broken_link(
    docs_checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (docs_checkout / "docs" / "bot.md").write_text("edited by hand\n")
    (docs_checkout / "README.md").write_text("See [the guide](docs/guide.md).\n")
    code, out = docs_stage(docs_checkout, capsys)
    assert code == 1
    assert "1 passed, 2 failed, 0 skipped" in out
    assert "- `docs::generated` in `CPU-Build_Docs`" in out
    assert "#### `` Failure: <path> is stale; run `ci-tool generate` `` (1 test)" in out
    assert "README.md:1:17: expected the link 'docs/guide.md' to name a file of the checkout, found none" in out


def test_the_docs_stage_dry_run_lists_the_checks_it_runs(
    docs_checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["stage", "run", "CPU-Build_Docs", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == "stage CPU-Build_Docs: no test list: its checks below are what it runs"
    check = shlex.join([sys.executable, "-m", "ci_tool", "generate", "--check"])
    assert out.split("\n# what CPU-Build_Docs checks, one result each:\n")[1].splitlines() == [
        f"  docs::generated: every generated file is fresh (`{check}`)",
        "  docs::links[README.md]: every relative link names a file of the checkout",
        "  docs::links[docs/bot.md]: every relative link names a file of the checkout",
    ]


def sanity_run(root: Path, results: Path) -> tuple[StageState, dict[str, TestOutcome], str]:
    loaded = open_catalog(REPO / "jenkins" / "stages.yml", REPO / "test-db")
    stage = loaded.catalog.by_name["CPU-PackageSanityCheck-PY311"]
    plan = replace(loaded.planner, sysinfo={}).stage(stage)
    result = run_job(plan, RunSettings(rootdir=root, results_dir=results, run_id="r1"))
    outcomes = {test.final.nodeid: test.final.outcome for test in result.tests}
    return result.state, outcomes, result.tests[0].final.message


def test_package_sanity_installs_the_wheel_and_runs_the_smoke_tests_against_it(tmp_path: Path) -> None:
    state, outcomes, _ = sanity_run(REPO, tmp_path / "results")
    assert state is StageState.PASSED
    assert outcomes[SANITY_CHECK] is TestOutcome.PASSED
    smoke = {nodeid for nodeid in outcomes if "test_installed_package.py::" in nodeid}
    assert len(smoke) == 4 and {outcomes[nodeid] for nodeid in smoke} == {TestOutcome.PASSED}
    assert not (REPO / "build").exists()  # the wheel is built from a copy


def test_package_sanity_fails_when_the_wheel_does_not_build(tmp_path: Path) -> None:
    broken = tmp_path / "repo"
    broken.mkdir()
    for name in ("README.md", "ci_tool", "src", "tests", "conftest.py"):
        if (REPO / name).exists():
            (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, broken / name)
    (broken / "pyproject.toml").write_text("[project]\nname = \n")  # not TOML
    state, outcomes, message = sanity_run(broken, tmp_path / "results")
    assert (state, outcomes) == (StageState.FAILED, {SANITY_CHECK: TestOutcome.FAILED})
    assert message.startswith("cannot build the wheel: ")
