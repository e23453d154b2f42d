"""Shared fixtures: the golden catalogs, their generated files on disk, and the real tools that check them.

The external tools are slow to start (a JVM each), so each runs once per session over every file:
`groovyc` compiles all generated Groovy in one call and `groovy` runs every behavioural scenario in one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from ci_tool.generate.context import generate_input
from ci_tool.generate.targets import generate_files
from ci_tool.stages.catalog_load import open_catalog
from tests.helpers.generate import (
    REPOSITORY_BUILD,
    WAIVED_ON_MAIN,
    Generated,
    PlanJobRunner,
    PullRequestOrigin,
    StubProcess,
    StubRunner,
    git,
    run_plan_job,
    write_ci_tool,
)
from tests.helpers.workflow_steps import tool

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
STUB = HERE / "pipeline_stub.groovy"


CATALOGS_DIR = HERE / "catalogs"  # <name>/stages.yml and <name>/expected/; test-db/ holds their contexts
CATALOG_NAMES = sorted(path.parent.name for path in CATALOGS_DIR.glob("*/stages.yml"))


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Generated]:
    result: dict[str, Generated] = {}
    for name in CATALOG_NAMES:
        catalog = open_catalog(CATALOGS_DIR / name / "stages.yml", CATALOGS_DIR / "test-db").catalog
        source = generate_input(catalog, REPOSITORY_BUILD)
        specs = source.stages
        root = tmp_path_factory.mktemp(name)
        files = generate_files(source)
        for target, text in files.items():
            (root / target).parent.mkdir(parents=True, exist_ok=True)
            (root / target).write_text(text, encoding="utf-8")
        result[name] = Generated(name, specs, files, root, source.narrowed)
    return result


def _java_env() -> dict[str, str]:
    """The environment with JAVA_HOME set to the machine's JDK (two levels above the real `java`)."""
    env = dict(os.environ)
    java = shutil.which("java")
    if "JAVA_HOME" not in env and java is not None:
        env["JAVA_HOME"] = str(Path(os.path.realpath(java)).parents[1])
    return env


def _groovy_tool(name: str) -> str:
    found = shutil.which(name)
    if found is None or shutil.which("java") is None:
        pytest.skip(f"{name} (Debian package `groovy`) or java is not installed; .ci/run installs both")
    return found


@pytest.fixture(scope="session")
def java_env() -> dict[str, str]:
    return _java_env()


@pytest.fixture(scope="session")
def groovyc() -> str:
    return _groovy_tool("groovyc")


@pytest.fixture(scope="session")
def actionlint() -> str:
    return tool("actionlint")


@pytest.fixture(scope="session")
def zizmor() -> str:
    return tool("zizmor")


@pytest.fixture(scope="session")
def make_workspace(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A checkout as CI sees it: the `small` catalog, its test-db, the tests it lists, and a
    .venv/bin/ci-tool that runs this ci-tool, in a fresh folder per call."""

    def make(name: str) -> Path:
        folder = tmp_path_factory.mktemp(name)
        (folder / "jenkins").mkdir()
        shutil.copy(CATALOGS_DIR / "small" / "stages.yml", folder / "jenkins" / "stages.yml")
        shutil.copytree(CATALOGS_DIR / "test-db", folder / "test-db")
        (folder / "tests").mkdir()
        for test in ("a", "b"):  # the tests the golden test-db lists
            (folder / "tests" / f"{test}.py").write_text(f"def test_{test}():\n    pass\n")
        write_ci_tool(folder)
        return folder

    return make


@pytest.fixture(scope="session")
def stub_process(tmp_path_factory: pytest.TempPathFactory) -> StubProcess:
    """Runs scenarios through pipeline_stub.groovy in one JVM: the finished process, whatever its exit code."""
    groovy = _groovy_tool("groovy")
    work = tmp_path_factory.mktemp("stub")

    def run(scenarios: Sequence[Mapping[str, object]]) -> subprocess.CompletedProcess[str]:
        spec = work / "scenarios.json"
        spec.write_text(json.dumps(list(scenarios)), encoding="utf-8")
        return subprocess.run(
            [groovy, str(STUB), str(spec)], capture_output=True, text=True, env=_java_env(), timeout=300
        )

    return run


@pytest.fixture(scope="session")
def run_stub(stub_process: StubProcess) -> StubRunner:
    """Runs scenarios through pipeline_stub.groovy in one JVM; one result per scenario, in order. A scenario
    that calls a step the stub does not model fails it (the stub exits 1 and names the step)."""

    def run(scenarios: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
        result = stub_process(scenarios)
        assert result.returncode == 0, result.stderr
        results: list[dict[str, object]] = json.loads(result.stdout)
        return results

    return run


@pytest.fixture(scope="session")
def plan_job() -> PlanJobRunner:
    """`plan_job(workflow_text, workspace, **inputs)`: run_plan_job, for tests."""
    return run_plan_job


@pytest.fixture(scope="session")
def pull_request(make_workspace, tmp_path_factory: pytest.TempPathFactory) -> PullRequestOrigin:  # type: ignore[no-untyped-def]
    source = make_workspace("pr-source")
    (source / ".gitignore").write_text(".venv/\n.ci-tool/\nresults/\nrequest.json\nselection.json\n")
    git(source, "init", "-q")
    git(source, "add", ".")
    git(source, "commit", "-q", "-m", "main")
    git(source, "checkout", "-q", "-b", "pr")
    (source / "docs").mkdir()
    (source / "docs" / "guide.md").write_text("# Guide\n")
    git(source, "add", ".")
    git(source, "commit", "-q", "-m", "the pull request's first commit")
    old_head = git(source, "rev-parse", "HEAD")
    (source / "docs" / "guide.md").write_text("# Guide\n\nMore.\n")
    git(source, "commit", "-q", "-am", "the pull request's head")
    head = git(source, "rev-parse", "HEAD")
    git(source, "checkout", "-q", "main")
    (source / "test-db" / "waives.txt").write_text(WAIVED_ON_MAIN)
    git(source, "add", ".")
    git(source, "commit", "-q", "-m", "main waives test_b")
    base = git(source, "rev-parse", "HEAD")
    origin = tmp_path_factory.mktemp("origin") / "origin.git"
    git(source.parent, "clone", "-q", "--bare", str(source), str(origin))
    git(origin, "update-ref", "refs/pull/7/head", head)
    git(origin, "branch", "-q", "-D", "pr")

    def clone(name: str) -> Path:
        folder = tmp_path_factory.mktemp(name) / "checkout"
        git(folder.parent, "clone", "-q", "--branch", "main", str(origin), str(folder))
        write_ci_tool(folder)
        return folder

    return PullRequestOrigin(origin, head, old_head, base, clone)
