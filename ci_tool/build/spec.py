"""What every test stage installs, in one place: the build makes exactly this, the stages install exactly
this, and the inputs' digest covers it.

A stage installs with uv when its build carries it (`BuildSpec.installer`): pip puts uv's own wheel into the
fresh environment, then uv installs the rest, from the build folder alone as pip would. uv unpacks the
wheels in parallel: the stages' 2.3 GB (torch, triton) took pip 98 s and uv 43 s on a loaded 2-core box, and
21.3 s and 17.4 s on a quiet one (docs/PERF.md).

uv runs without its cache (`--no-cache`). It keys a find-links folder's wheels by the folder's path and the
file's name, and both stay the same from one commit to the next on a self-hosted runner: from a kept cache,
a stage installed the last commit's ci-tool. Where the path changes instead (a workspace per run), each
stage left a new unpacked copy of torch (0.9 GB) in the runner's cache, which nothing removed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ci_tool.layout import BUILD_DIR, TORCH_PIN, UV_PIN

PROJECT = "ci-tool"  # pyproject.toml's [project] name
# The engine this repository's stages run, and the test extra they import (hypothesis, the workflow linters).
STAGE_EXTRAS = ("engine", "test")


@dataclass(frozen=True)
class BuildSpec:
    """The requirements a build's wheelhouse satisfies, as pip reads them."""

    pins: tuple[str, ...]  # e.g. ("torch==2.13.0",): what the stages pin besides the project
    extras: tuple[str, ...]
    installer: str | None = None  # e.g. "uv==0.13.9": built too, and installs the rest (module docstring)

    @property
    def project_requirement(self) -> str:
        """`ci-tool[engine,test]`: the project from the build's wheel, with the stages' extras."""
        return f"{PROJECT}[{','.join(self.extras)}]" if self.extras else PROJECT

    @property
    def requirements(self) -> tuple[str, ...]:
        """What the stages install (the installer first, when there is one)."""
        return (*self.installed_by_pip, *self.pins, self.project_requirement)

    @property
    def installed_by_pip(self) -> tuple[str, ...]:
        return () if self.installer is None else (self.installer,)


STAGE_BUILD = BuildSpec(pins=(TORCH_PIN,), extras=STAGE_EXTRAS, installer=UV_PIN)


# The generated pipelines' build: ci-tool itself (no extras) in a fresh environment, then `ci-tool build`.
BUILD_SETUP_COMMAND = "python3 -m venv --clear .venv && .venv/bin/pip install --quiet ."
BUILD_COMMAND = ".venv/bin/ci-tool build --output"  # + the folder


def build_command(folder: str = BUILD_DIR) -> str:
    """The shell line a pipeline builds with, into `folder` (an earlier build of the same inputs there is kept)."""
    return f"{BUILD_SETUP_COMMAND} && {BUILD_COMMAND} {folder}"


def pip_install_command(spec: BuildSpec = STAGE_BUILD, folder: str = BUILD_DIR) -> str:
    """A fresh environment with `spec` installed from the build in `folder` alone: no index, no pip or uv
    configuration file, no PIP_FIND_LINKS (a runner's wheel folder or index never stands in for the build;
    uv's own variables lose to the flags given)."""
    venv = "python3 -m venv --clear .venv"
    pip = "PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= .venv/bin/pip install --quiet --no-compile --no-index"
    if spec.installer is None:
        return f"{venv} && {pip} --find-links {folder} {_quoted(spec.requirements)}"
    uv = "UV_NO_CONFIG=1 .venv/bin/uv pip install --quiet --python .venv/bin/python --offline --no-cache --no-index"
    by_uv = (*spec.pins, spec.project_requirement)
    return (
        f"{venv} && {pip} --find-links {folder} {_quoted(spec.installed_by_pip)} "
        f"&& {uv} --find-links {folder} {_quoted(by_uv)}"
    )


def _quoted(requirements: tuple[str, ...]) -> str:
    return " ".join(shlex.quote(requirement) for requirement in requirements)


def install_command(spec: BuildSpec = STAGE_BUILD, folder: str = BUILD_DIR) -> str:
    """The shell line a test stage sets its environment up with: the install from the build, then the check
    that the build is its checkout's (a stage never tests other code than the one it checked out)."""
    return f"{pip_install_command(spec, folder)} && .venv/bin/ci-tool build --check --output {folder}"
