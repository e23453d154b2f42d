"""Shared fixtures: the golden catalogs, their generated files on disk, and the real tools that check them.

The external tools are slow to start (a JVM each), so each runs once per session over every file:
`groovyc` compiles all generated Groovy in one call and `groovy` runs every behavioural scenario in one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from ci_tool.generate.context import CatalogStage, generate_input
from ci_tool.generate.targets import generate_files
from ci_tool.stages.catalog_load import open_catalog

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
STUB = HERE / "pipeline_stub.groovy"


CATALOGS_DIR = HERE / "catalogs"  # <name>/stages.yml and <name>/expected/; test-db/ holds their contexts
CATALOG_NAMES = sorted(path.parent.name for path in CATALOGS_DIR.glob("*/stages.yml"))


@dataclass(frozen=True)
class Generated:
    """One golden catalog's stages and its generated files, written under `root`."""

    name: str
    specs: Sequence[CatalogStage]
    files: Mapping[str, str]  # target path -> text
    root: Path
    narrowed: Sequence[CatalogStage] = ()  # the `-cbts` stages the Jenkins tables hold rows for

    def path(self, target: str) -> Path:
        return self.root / target


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Generated]:
    result: dict[str, Generated] = {}
    for name in CATALOG_NAMES:
        source = generate_input(open_catalog(CATALOGS_DIR / name / "stages.yml", CATALOGS_DIR / "test-db").catalog)
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


def _python_tool(name: str) -> str:
    """A tool from this environment's bin folder (`pip install '.[test]'` puts it there), else from PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install '.[test]' installs it)")
    return found


@pytest.fixture(scope="session")
def java_env() -> dict[str, str]:
    return _java_env()


@pytest.fixture(scope="session")
def groovyc() -> str:
    return _groovy_tool("groovyc")


@pytest.fixture(scope="session")
def actionlint() -> str:
    return _python_tool("actionlint")


@pytest.fixture(scope="session")
def zizmor() -> str:
    return _python_tool("zizmor")


def write_ci_tool(folder: Path) -> None:
    """`folder/.venv/bin/ci-tool`: this ci-tool, on the checkout's own history (never the developer's, nor
    another checkout's) unless the pipeline binds a shared one."""
    script = folder / ".venv" / "bin" / "ci-tool"
    script.parent.mkdir(parents=True, exist_ok=True)
    history = shlex.quote(str(folder / ".ci-tool" / "history.sqlite"))
    python = shlex.quote(sys.executable)
    line = f'CI_TOOL_HISTORY="${{CI_TOOL_HISTORY:-{history}}}" exec {python} -m ci_tool "$@"'
    script.write_text(f"#!/bin/sh\n{line}\n")
    script.chmod(0o755)


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


StubRunner = Callable[[Sequence[Mapping[str, object]]], list[dict[str, object]]]


StubProcess = Callable[[Sequence[Mapping[str, object]]], subprocess.CompletedProcess[str]]


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


@dataclass(frozen=True)
class PlanJob:
    """What the workflow's plan job did: its exit code, its outputs and its log."""

    code: int
    outputs: Mapping[str, str]
    log: str

    def matrix(self, job_id: str) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = json.loads(self.outputs[job_id])
        return rows

    def stages(self, job_id: str) -> list[str]:
        return [str(row["stage"]) for row in self.matrix(job_id)]


GITHUB_INPUT = re.compile(r"\$\{\{ inputs\.(\w+) \}\}")
GITHUB_STEP_OUTPUT = re.compile(r"\$\{\{ steps\.(\w+)\.outputs\.(\w+) \}\}")
GITHUB_SECRET = re.compile(r"\$\{\{ secrets\.(\w+) \}\}")
RUNS_WHEN_BASE_REF = "${{ inputs.base_ref != '' }}"


def run_plan_job(
    workflow_text: str, workspace: Path, secrets: Mapping[str, str] | None = None, **inputs: str
) -> PlanJob:
    """Run the plan job's shell steps as GitHub would, in `workspace` (a checkout with `.venv/bin/ci-tool`):
    `inputs.*` expressions take the given inputs (the workflow's defaults otherwise), `secrets.*` the given
    secrets ("" for the others, as for a repository without them), `steps.ID.outputs.*` what step ID wrote
    to its own $GITHUB_OUTPUT file ("" when it was skipped; the file is outside the checkout, as on a
    runner), the checkout, set-up and artifact steps are what the workspace already is, and the job's
    outputs are the plan step's."""
    workflow = yaml.safe_load(workflow_text)
    trigger = workflow[True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads the key `on` as true
    values = {name: str(spec["default"]) for name, spec in trigger.items()} | inputs
    step_outputs: dict[str, dict[str, str]] = {}
    log = []
    outputs_folder = workspace.parent  # beside the checkout: what the job writes there is no change of its code
    for index, step in enumerate(workflow["jobs"]["plan"]["steps"]):
        if "uses" in step or step["name"] == "Set up ci-tool":
            continue
        if "if" in step:
            assert step["if"] == RUNS_WHEN_BASE_REF, f"the plan job gained a condition this runner cannot read: {step}"
            if not values["base_ref"]:
                continue
        env = {
            key: GITHUB_SECRET.sub(
                lambda m: (secrets or {}).get(m.group(1), ""),
                GITHUB_STEP_OUTPUT.sub(
                    lambda m: step_outputs.get(m.group(1), {}).get(m.group(2), ""),
                    GITHUB_INPUT.sub(lambda m: values[m.group(1)], str(value)),
                ),
            )
            for key, value in step.get("env", {}).items()
        }
        assert "${{" not in step["run"], "expressions never reach a shell line"
        output = outputs_folder / f"{workspace.name}.github_output_{index}"
        output.write_text("")
        result = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=workspace,
            env={**os.environ, **env, "GITHUB_OUTPUT": str(output)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        log.append(result.stdout + result.stderr)
        if result.returncode != 0:
            return PlanJob(result.returncode, {}, "".join(log))
        if "id" in step:
            step_outputs[step["id"]] = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return PlanJob(0, step_outputs.get("plan", {}), "".join(log))


PlanJobRunner = Callable[..., PlanJob]


@pytest.fixture(scope="session")
def plan_job() -> PlanJobRunner:
    """`plan_job(workflow_text, workspace, **inputs)`: run_plan_job, for tests."""
    return run_plan_job


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


@dataclass(frozen=True)
class PullRequestOrigin:
    """A bare `origin` with branch main and pull request #7 (refs/pull/7/head, as GitHub serves it)."""

    origin: Path
    head: str  # the pull request's head
    old_head: str  # its first commit, which it has moved past
    base: str  # main's tip, which gained a waive after the pull request branched off
    clone: Callable[[str], Path]  # a checkout of main with this ci-tool as .venv/bin/ci-tool, as `checkout scm`


WAIVED_ON_MAIN = "tests/b.py::test_b SKIP (https://github.com/o/r/issues/9)\n"


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
