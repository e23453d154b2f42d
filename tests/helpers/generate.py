"""What the generate tests share: what this repository's stages install (`REPOSITORY_BUILD`, the build spec
every generated golden file renders), a golden catalog's generated files (`Generated`), the types of the pipeline
stub's runners, the plan job of the GitHub workflow run as GitHub would (`run_plan_job`), a checkout's
`.venv/bin/ci-tool`, and the pull request origin the Jenkins and GitHub pipelines check out."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from ci_tool.build.spec import project_build
from ci_tool.generate.context import CatalogStage

REPOSITORY_BUILD = project_build(Path(__file__).resolve().parents[2])


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


StubRunner = Callable[[Sequence[Mapping[str, object]]], list[dict[str, object]]]


StubProcess = Callable[[Sequence[Mapping[str, object]]], subprocess.CompletedProcess[str]]


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
