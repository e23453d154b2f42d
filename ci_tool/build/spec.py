"""What every test stage installs, in one place: the build makes exactly this, the stages install exactly
this, and the inputs' digest covers it."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ci_tool.layout import BUILD_DIR, TORCH_PIN

PROJECT = "ci-tool"  # pyproject.toml's [project] name
# The engine this repository's stages run, and the test extra they import (hypothesis, the workflow linters).
STAGE_EXTRAS = ("engine", "test")


@dataclass(frozen=True)
class BuildSpec:
    """The requirements a build's wheelhouse satisfies, as pip reads them."""

    pins: tuple[str, ...]  # e.g. ("torch==2.13.0",): what the stages pin besides the project
    extras: tuple[str, ...]

    @property
    def project_requirement(self) -> str:
        """`ci-tool[engine,test]`: the project from the build's wheel, with the stages' extras."""
        return f"{PROJECT}[{','.join(self.extras)}]" if self.extras else PROJECT

    @property
    def requirements(self) -> tuple[str, ...]:
        return (*self.pins, self.project_requirement)


STAGE_BUILD = BuildSpec(pins=(TORCH_PIN,), extras=STAGE_EXTRAS)


# The generated pipelines' build: ci-tool itself (no extras) in a fresh environment, then `ci-tool build`.
BUILD_SETUP_COMMAND = "python3 -m venv --clear .venv && .venv/bin/pip install --quiet ."
BUILD_COMMAND = ".venv/bin/ci-tool build --output"  # + the folder


def build_command(folder: str = BUILD_DIR) -> str:
    """The shell line a pipeline builds with, into `folder` (an earlier build of the same inputs there is kept)."""
    return f"{BUILD_SETUP_COMMAND} && {BUILD_COMMAND} {folder}"


def pip_install_command(spec: BuildSpec = STAGE_BUILD, folder: str = BUILD_DIR) -> str:
    """A fresh environment with `spec` installed from the build in `folder` alone: no index, no pip
    configuration file and no PIP_FIND_LINKS (a runner's wheel folder or index never stands in for the build)."""
    requirements = " ".join(shlex.quote(requirement) for requirement in spec.requirements)
    return (
        "python3 -m venv --clear .venv && PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= .venv/bin/pip install --quiet "
        f"--no-compile --no-index --find-links {folder} {requirements}"
    )


def install_command(spec: BuildSpec = STAGE_BUILD, folder: str = BUILD_DIR) -> str:
    """The shell line a test stage sets its environment up with: the install from the build, then the check
    that the build is its checkout's (a stage never tests other code than the one it checked out)."""
    return f"{pip_install_command(spec, folder)} && .venv/bin/ci-tool build --check --output {folder}"
