"""What every test stage installs, in one place: the build makes exactly this, the stages install exactly
this, and the inputs' digest covers it. A project says what in its pyproject.toml (ci-tool's own):

    [tool.ci-tool.build]
    pins = ["torch==2.13.0"]      # requirements the stages pin besides the project (default: none)
    extras = ["engine", "test"]   # the project's extras the stages install with it (default: none)
    installer = "uv==0.13.9"      # installs the rest from the build (default: none, pip does)

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
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ci_tool.errors import BuildError
from ci_tool.layout import BUILD_DIR

PYPROJECT = "pyproject.toml"
BUILD_TABLE = ("tool", "ci-tool", "build")


@dataclass(frozen=True)
class BuildSpec:
    """The requirements a build's wheelhouse satisfies, as pip reads them."""

    pins: tuple[str, ...]  # e.g. ("torch==2.13.0",): what the stages pin besides the project
    extras: tuple[str, ...]
    installer: str | None = None  # e.g. "uv==0.13.9": built too, and installs the rest (module docstring)
    project: str = "ci-tool"  # pyproject.toml's [project] name

    @property
    def project_requirement(self) -> str:
        """`ci-tool[engine,test]`: the project from the build's wheel, with the stages' extras."""
        return f"{self.project}[{','.join(self.extras)}]" if self.extras else self.project

    @property
    def requirements(self) -> tuple[str, ...]:
        """What the stages install (the installer first, when there is one)."""
        return (*self.installed_by_pip, *self.pins, self.project_requirement)

    @property
    def installed_by_pip(self) -> tuple[str, ...]:
        return () if self.installer is None else (self.installer,)


def read_pyproject(root: Path) -> dict[str, object]:
    """The project's pyproject.toml as a table; a BuildError saying where when there is none to read."""
    path = root / PYPROJECT
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BuildError(
            f"{path}: expected the project's pyproject.toml, found no file",
            hint="the generated pipelines build the project with pip: its pyproject.toml names it ([project] name) "
            "and what the stages install with it ([tool.ci-tool.build])",
        ) from None
    except (OSError, UnicodeDecodeError) as problem:
        raise BuildError(f"{path}: expected a readable pyproject.toml, found {problem}") from None
    except tomllib.TOMLDecodeError as problem:
        raise BuildError(f"{path}: expected TOML, found an error: {problem}") from None


def project_build(root: Path) -> BuildSpec:
    """The build spec of the project at `root` (module docstring); a BuildError saying where for a table that
    is not one."""
    path = root / PYPROJECT
    document = read_pyproject(root)
    project_table = document.get("project")
    project = project_table.get("name") if isinstance(project_table, dict) else None
    if not isinstance(project, str) or not project:
        raise BuildError(f"{path}: expected [project] name, found {project!r}", hint="name the project there")
    table: object = document
    for key in BUILD_TABLE:
        table = table.get(key, {}) if isinstance(table, dict) else table
    where = f"{path} [{'.'.join(BUILD_TABLE)}]"
    if not isinstance(table, dict):
        raise BuildError(f"{where}: expected a table, found {table!r}")
    unknown = sorted(set(table) - {"pins", "extras", "installer"})
    if unknown:
        raise BuildError(f"{where}: expected the keys pins, extras and installer, found {', '.join(unknown)}")
    installer = table.get("installer")
    if installer is not None and (not isinstance(installer, str) or not installer.strip()):
        raise BuildError(f"{where} installer: expected a requirement such as \"uv==0.13.9\", found {installer!r}")
    return BuildSpec(_requirements(table, "pins", where), _requirements(table, "extras", where), installer, project)


def _requirements(table: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise BuildError(f"{where} {key}: expected a list of non-empty strings, found {value!r}")
    return tuple(value)


# What the jobs that run ci-tool but test nothing install from the checkout: the plan and lost-stage jobs
# ci-tool with the shared history's driver, the build job ci-tool alone.
SELECT_TARGET = ".[postgres]"
BUILD_TARGET = "."
BUILD_COMMAND = ".venv/bin/ci-tool build --output"  # + the folder
# Every job's environment starts fresh, and uv installs into it by name: the source installs and the stages'
# installs from the build say these the same way.
FRESH_VENV = "python3 -m venv --clear .venv"
UV_INSTALL = ".venv/bin/uv pip install --quiet --python .venv/bin/python"


def source_install_command(spec: BuildSpec, target: str) -> str:
    """A fresh environment with `target` (the checkout, with extras) installed from source and the index, by
    the spec's installer where it names one, else by pip. uv runs without its cache here too: it keys a local
    directory's build by its pyproject.toml alone, so a kept cache installs an earlier commit's code (module
    docstring). It builds and installs ci-tool and its dependencies in 5.5 s where pip took 10.8 s
    (docs/PERF.md)."""
    pip = ".venv/bin/pip install --quiet"
    if spec.installer is None:
        return f"{FRESH_VENV} && {pip} {shlex.quote(target)}"
    return f"{FRESH_VENV} && {pip} {shlex.quote(spec.installer)} && {UV_INSTALL} --no-cache {shlex.quote(target)}"


def build_setup_command(spec: BuildSpec) -> str:
    """The generated pipelines' build environment: ci-tool itself (no extras), from the checkout."""
    return source_install_command(spec, BUILD_TARGET)


def select_setup_command(spec: BuildSpec) -> str:
    """The environment of the jobs that plan and find lost stages: ci-tool with the shared history's driver."""
    return source_install_command(spec, SELECT_TARGET)


def build_command(spec: BuildSpec, folder: str = BUILD_DIR) -> str:
    """The shell line a pipeline builds with, into `folder` (an earlier build of the same inputs there is kept)."""
    return f"{build_setup_command(spec)} && {BUILD_COMMAND} {folder}"


def pip_install_command(spec: BuildSpec, folder: str = BUILD_DIR) -> str:
    """A fresh environment with `spec` installed from the build in `folder` alone: no index, no pip or uv
    configuration file, no PIP_FIND_LINKS (a runner's wheel folder or index never stands in for the build;
    uv's own variables lose to the flags given)."""
    pip = "PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= .venv/bin/pip install --quiet --no-compile --no-index"
    if spec.installer is None:
        return f"{FRESH_VENV} && {pip} --find-links {folder} {_quoted(spec.requirements)}"
    uv = f"UV_NO_CONFIG=1 {UV_INSTALL} --offline --no-cache --no-index"
    by_uv = (*spec.pins, spec.project_requirement)
    return (
        f"{FRESH_VENV} && {pip} --find-links {folder} {_quoted(spec.installed_by_pip)} "
        f"&& {uv} --find-links {folder} {_quoted(by_uv)}"
    )


def _quoted(requirements: tuple[str, ...]) -> str:
    return " ".join(shlex.quote(requirement) for requirement in requirements)


def install_command(spec: BuildSpec, folder: str = BUILD_DIR) -> str:
    """The shell line a test stage sets its environment up with: the install from the build, then the check
    that the build is its checkout's (a stage never tests other code than the one it checked out)."""
    return f"{pip_install_command(spec, folder)} && .venv/bin/ci-tool build --check --output {folder}"
