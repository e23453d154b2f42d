"""Make a build folder (`pip wheel`), or reuse the one already there when it is a build of the same inputs.

build(root, folder, spec)   folder holds the build of root's inputs afterwards: reused when its
                            manifest names the same inputs' digest and every wheel is there, whole
                            (an earlier build of this commit, copied in by the pipeline); else restored
                            from the runner's kept builds when one of the digest serves (build/kept.py);
                            otherwise built afresh beside it and moved into place, and kept
check(root, folder, spec)   the manifest, when the folder is the build of root's inputs; a BuildError
                            naming both digests when it is not
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ci_tool import gitinfo
from ci_tool.build import kept as kept_builds
from ci_tool.build.inputs import inputs_digest, python_tag, source_files
from ci_tool.build.manifest import BuildManifest, manifest_path, read_manifest, write_manifest
from ci_tool.build.spec import PYPROJECT, BuildSpec, read_pyproject
from ci_tool.errors import BuildError

PIP_TIMEOUT_SECONDS = 3600  # torch and its CUDA wheels: gigabytes on a cold cache


@dataclass(frozen=True)
class BuildOutcome:
    manifest: BuildManifest
    reused: bool
    why_built: str  # why an earlier build did not serve ("" when reused)
    restored_from: Path | None = None  # the kept builds' folder it was copied from (reused too)


def build(
    root: Path, folder: Path, spec: BuildSpec, *, python: str = sys.executable, kept: Path | None = None
) -> BuildOutcome:
    """`kept`: the runner's kept builds (None: none are kept)."""
    digest = inputs_digest(root, spec)
    why_built = _why_not_reusable(folder, digest)
    if not why_built:
        if kept is not None and not (kept / digest).is_dir():
            kept_builds.keep(kept, folder, digest)
        return BuildOutcome(read_manifest(folder), reused=True, why_built="")
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    if kept is not None and kept_builds.restore(kept, digest, partial):
        if not _why_not_reusable(partial, digest):
            _move_into_place(partial, folder)
            return BuildOutcome(read_manifest(folder), reused=True, why_built="", restored_from=kept)
        shutil.rmtree(partial)  # a damaged kept build: made again below, and kept in its place
    partial.mkdir(parents=True)
    wheel = _project_wheel(root, partial, python)
    # The project as its wheel file, with the extras: never a same-named project of the index.
    project = f"{wheel}[{','.join(spec.extras)}]" if spec.extras else str(wheel)
    _pip(python, ["wheel", "--quiet", "--wheel-dir", str(partial), *spec.installed_by_pip, *spec.pins, project])
    commit = gitinfo.commit_of(root)
    manifest = BuildManifest(commit, digest, python_tag(), spec.requirements, wheel.name, _wheel_digests(partial))
    write_manifest(partial, manifest)
    _move_into_place(partial, folder)
    if kept is not None:
        kept_builds.keep(kept, folder, digest)
    return BuildOutcome(manifest, reused=False, why_built=why_built)


def _move_into_place(partial: Path, folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def check(root: Path, folder: Path, spec: BuildSpec) -> BuildManifest:
    manifest = read_manifest(folder)
    digest = inputs_digest(root, spec)
    if manifest.inputs_digest != digest:
        raise BuildError(
            f"{manifest_path(folder)}: expected the build of this checkout's inputs {digest[:12]}, found the build "
            f"of inputs {manifest.inputs_digest[:12]} ({manifest.describe()})",
            hint="install from this commit's build, or run `ci-tool build` in this checkout",
        )
    return manifest


def _why_not_reusable(folder: Path, digest: str) -> str:
    """Why the folder is no build of these inputs ("" when it is one, whole)."""
    if not manifest_path(folder).is_file():
        return f"no earlier build in {folder}"
    try:
        manifest = read_manifest(folder)
    except BuildError as problem:
        return str(problem)
    if manifest.inputs_digest != digest:
        return f"the build in {folder} is of other inputs ({manifest.describe()})"
    for name, expected in manifest.wheels.items():
        path = folder / name
        if not path.is_file() or _sha256(path) != expected:
            return f"the build in {folder} lacks {name} or holds another file by that name"
    return ""


def _project_wheel(root: Path, into: Path, python: str) -> Path:
    """The project's wheel, built from a copy of its sources (a build in the checkout would leave build/ and
    egg-info there) in the running environment, once it holds pyproject.toml's build requirements (a fresh
    environment's setuptools may be older than they ask, and lack `wheel`)."""
    _pip(python, ["install", "--quiet", *_build_requirements(root)])
    with tempfile.TemporaryDirectory(prefix="ci-tool-build-") as scratch:
        source = Path(scratch) / "source"
        for path in source_files(root):
            target = source / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        _pip(python, ["wheel", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
                      "--wheel-dir", str(into), str(source)])  # fmt: skip
    wheels = sorted(into.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected the project's wheel in {into}, found {[w.name for w in wheels]}")
    return wheels[0]


def _build_requirements(root: Path) -> list[str]:
    """pyproject.toml's [build-system] requires."""
    path = root / PYPROJECT
    try:
        requires = read_pyproject(root)["build-system"]["requires"]  # type: ignore[index]
    except (KeyError, TypeError) as problem:
        raise BuildError(f"{path}: expected [build-system] requires, found none ({problem})") from None
    if not isinstance(requires, list) or not all(isinstance(item, str) for item in requires):
        raise BuildError(f"{path}: expected [build-system] requires as a list of requirements, found {requires!r}")
    return list(requires)


def _pip(python: str, args: list[str]) -> None:
    command = [python, "-m", "pip", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as problem:
        raise BuildError(f"cannot run `pip {args[0]}`: {problem}") from None
    if done.returncode:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        tail = " | ".join(lines[-5:]) or "no output"
        raise BuildError(f"`pip {args[0]}` failed (exit code {done.returncode}): {tail}")


def _wheel_digests(folder: Path) -> dict[str, str]:
    return {path.name: _sha256(path) for path in sorted(folder.glob("*.whl"))}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
