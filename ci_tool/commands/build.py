"""`ci-tool build`: the wheels every test stage installs, built once (or reused), or checked (`--check`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ci_tool.build.spec import project_build
from ci_tool.build.wheelhouse import BuildOutcome, check
from ci_tool.build.wheelhouse import build as make_build
from ci_tool.layout import BUILD_DIR, KEPT_BUILDS_ENV


@click.command()
@click.option("--output", "folder", type=click.Path(file_okay=False, path_type=Path), default=Path(BUILD_DIR),
              show_default=True, help="The build folder: the wheels and manifest.json.")  # fmt: skip
@click.option("--check", "check_only", is_flag=True,
              help="Build nothing: fail unless the folder is the build of this checkout.")  # fmt: skip
@click.option("--kept-builds", "kept", type=click.Path(file_okay=False, path_type=Path), envvar=KEPT_BUILDS_ENV,
              help=f"A folder where this runner keeps its last builds by their inputs' digest (${KEPT_BUILDS_ENV}): "
                   "a build of the same inputs is copied from there instead of made again.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def build(folder: Path, check_only: bool, kept: Path | None, as_json: bool) -> int:
    """Build the project's wheel and a wheelhouse of what the stages install with it (pyproject.toml's
    [tool.ci-tool.build]: pins, extras, installer), keyed by the commit and the inputs' digest; an earlier
    build of the same inputs in the folder, or kept by the runner, is reused."""
    root = Path.cwd()
    if check_only:
        manifest = check(root, folder, project_build(Path()))
        verdict = f"{folder} is this checkout's build"
    else:
        outcome = make_build(root, folder, project_build(Path()), kept=kept)
        manifest = outcome.manifest
        verdict = _verdict(folder, outcome)
    click.echo(json.dumps(manifest.to_json(), indent=2) if as_json else f"{verdict}: {manifest.describe()}")
    return 0


def _verdict(folder: Path, outcome: BuildOutcome) -> str:
    if outcome.restored_from is not None:
        return f"restored {folder} from the build kept in {outcome.restored_from}"
    return f"reused the build in {folder}" if outcome.reused else f"built {folder} ({outcome.why_built})"
