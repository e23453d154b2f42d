"""The repository layout and defaults live in one module; what the README tells people to run agrees, and the README
leads to every chapter of the docs/ guide and stays under 150 lines."""

from __future__ import annotations

import re
from pathlib import Path

from ci_tool.build.spec import install_command, project_build
from ci_tool.layout import (
    CATALOG_PATH,
    DURATIONS_PATH,
    TEST_DB_DIR,
    TORCH_PIN,
    durations_file_of,
    waives_file_of,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_set_up_commands_install_the_pinned_torch_and_the_engine_extra() -> None:
    commands = re.findall(r"^python3 -m venv .*$", (ROOT / "README.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert len(commands) == 2
    installs = re.compile(rf"pip install (--[a-z-]+ )*{re.escape(TORCH_PIN)} -e '\.\[engine,test\]'")
    assert all(installs.search(command) for command in commands), commands
    # the generated stage jobs install the same, from the pipeline's build (pyproject.toml's [tool.ci-tool.build])
    build = project_build(ROOT)
    assert (build.pins, build.requirements[-1]) == ((TORCH_PIN,), "ci-tool[engine,test]")
    assert f"--find-links ci-build {TORCH_PIN} 'ci-tool[engine,test]'" in install_command(build)


def test_the_readme_links_every_chapter_of_the_guide() -> None:
    """README is the landing page: a docs/ chapter it does not link is one no newcomer finds."""
    linked = set(re.findall(r"\]\((docs/[^)#\s]+)", (ROOT / "README.md").read_text(encoding="utf-8")))
    chapters = {path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").rglob("*.md")}
    assert sorted(chapters - linked) == []


README_LINE_LIMIT = 150  # README.md stays under it: a landing page, read in one sitting; detail goes in docs/


def test_the_readme_stays_short_enough_to_read_in_one_sitting() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_LINE_LIMIT, f"README.md has {len(lines)} lines: move the detail to a docs/ chapter"


def test_the_default_paths_name_this_repository() -> None:
    assert (ROOT / CATALOG_PATH).is_file() and (ROOT / TEST_DB_DIR).is_dir()
    assert durations_file_of(Path(TEST_DB_DIR)) == Path(DURATIONS_PATH)
    assert (ROOT / waives_file_of(Path(TEST_DB_DIR))).is_file() and (ROOT / DURATIONS_PATH).is_file()


def test_the_hand_written_workflows_install_ci_tool_with_the_build_specs_installer() -> None:
    """bot.yml and approval-labels.yml set ci-tool up as the generated jobs do (build/spec.py): one uv pin."""
    installer = project_build(ROOT).installer
    workflows = [ROOT / ".github" / "workflows" / name for name in ("bot.yml", "approval-labels.yml")]
    pins = {path.name: re.findall(r"pip\"? install --quiet (uv==\S+)", path.read_text("utf-8")) for path in workflows}
    assert pins == {path.name: [installer, installer] for path in workflows}
