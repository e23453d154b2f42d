"""The package-sanity stage installs the pipeline's build (ci-build/) when the checkout holds one, the same
wheel every test stage installed, and builds the wheel itself only where there is none; a build of other
inputs than the checkout's fails the check. Real pip, a tiny project named as ours, no index."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.build.inputs import inputs_digest
from ci_tool.build.manifest import BuildManifest, write_manifest
from ci_tool.build.spec import project_build
from ci_tool.layout import BUILD_DIR
from ci_tool.run.invocation import RunSettings
from ci_tool.run.jobs import _JobFailed, install_fresh

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "ci-tool"
version = "0.1.0"

[tool.setuptools.packages.find]
where = [".", "src"]
include = ["ci_tool*", "kvengine*"]
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    (root / "ci_tool").mkdir(parents=True)
    (root / "src" / "kvengine").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "README.md").write_text("# tiny\n")
    (root / "ci_tool" / "__init__.py").write_text("")
    (root / "src" / "kvengine" / "__init__.py").write_text("")
    return root


def with_build(root: Path, tmp_path: Path, *, digest: str | None = None) -> None:
    """ci-build/ as the pipeline's build leaves it: the project's wheel (built from the checkout plus a module
    `ci_tool.from_build`, by which the fresh environment tells which wheel it got) and a manifest of the
    checkout's inputs (or of `digest`)."""
    marked = tmp_path / "marked"
    shutil.copytree(root, marked)
    (marked / "ci_tool" / "from_build.py").write_text("")
    folder = root / BUILD_DIR
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                    "-w", str(folder), str(marked)], check=True, capture_output=True, timeout=300)  # fmt: skip
    (wheel,) = folder.glob("*.whl")
    manifest = BuildManifest(None, digest or inputs_digest(root, project_build(root)), "3.11-x86_64",
                             project_build(root).requirements,
                             wheel.name, {wheel.name: hashlib.sha256(wheel.read_bytes()).hexdigest()})  # fmt: skip
    write_manifest(folder, manifest)


def imports_the_builds_wheel(python: Path) -> bool:
    done = subprocess.run([str(python), "-I", "-c", "import ci_tool.from_build"], capture_output=True, timeout=60)
    return done.returncode == 0


def settings(root: Path, tmp_path: Path) -> RunSettings:
    (tmp_path / "work").mkdir()  # the stage's work folder, which package_sanity makes
    return RunSettings(rootdir=root, results_dir=tmp_path / "results", run_id="run")


def test_the_check_installs_the_builds_wheel_when_the_checkout_holds_one(checkout: Path, tmp_path: Path) -> None:
    with_build(checkout, tmp_path)
    python = install_fresh(settings(checkout, tmp_path), tmp_path / "work")
    assert imports_the_builds_wheel(python)
    assert not (tmp_path / "work" / "wheels").exists()  # nothing built


def test_without_a_build_the_check_builds_the_wheel_itself(checkout: Path, tmp_path: Path) -> None:
    python = install_fresh(settings(checkout, tmp_path), tmp_path / "work")
    assert not imports_the_builds_wheel(python)
    assert [path.name for path in (tmp_path / "work" / "wheels").iterdir()] == ["ci_tool-0.1.0-py3-none-any.whl"]


def test_a_build_of_other_inputs_fails_the_check(checkout: Path, tmp_path: Path) -> None:
    with_build(checkout, tmp_path, digest="0" * 64)
    with pytest.raises(_JobFailed) as failed:
        install_fresh(settings(checkout, tmp_path), tmp_path / "work")
    digest = inputs_digest(checkout, project_build(checkout))
    assert str(failed.value).startswith(
        f"cannot use the build in ci-build: {checkout / 'ci-build' / 'manifest.json'}: expected the build of this "
        f"checkout's inputs {digest[:12]}, found the build of inputs 000000000000"
    ), str(failed.value)
