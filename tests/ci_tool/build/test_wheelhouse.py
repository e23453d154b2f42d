"""`ci-tool build` for real on a tiny project (pip with no index): the build holds the project's wheel and
its wheelhouse and a manifest with the commit and the inputs' digest; a second build of the same inputs
reuses it; a change of the sources, a missing or altered wheel builds again; a stage installs from the
build alone, with every index unreachable, by pip or by the uv the build carries; `--check` refuses another
checkout's build."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.build.inputs import inputs_digest
from ci_tool.build.manifest import BuildManifest, read_manifest, write_manifest
from ci_tool.build.spec import BuildSpec, pip_install_command, project_build, select_setup_command
from ci_tool.build.wheelhouse import build, check
from ci_tool.cli import main
from ci_tool.errors import BuildError
from tests.helpers.generate import REPOSITORY_BUILD

# A project named as ours, with one dependency of its own (also built here, as a wheel of the wheelhouse):
# what the stages install is the project with its extras, resolved from the build folder alone.
TINY = BuildSpec(pins=("tinydep==1.0",), extras=("test",))
UV_PIN = REPOSITORY_BUILD.installer or "uv"  # the uv this repository's stages install with
TINY_BY_UV = BuildSpec(pins=("tinydep==1.0",), extras=("test",), installer=UV_PIN)
PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "ci-tool"
version = "0.1.0"
dependencies = []

[project.optional-dependencies]
test = ["tinydep"]

[tool.setuptools.packages.find]
where = [".", "src"]
include = ["ci_tool*", "kvengine*"]
"""
DEPENDENCY = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "tinydep"
version = "1.0"

[tool.setuptools]
py-modules = ["tinydep"]
"""


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True, capture_output=True, timeout=300)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed checkout of the tiny project; pip finds tinydep's wheel in a folder and no index."""
    root = tmp_path / "checkout"
    (root / "ci_tool").mkdir(parents=True)
    (root / "src" / "kvengine").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "README.md").write_text("# tiny\n")
    (root / "ci_tool" / "__init__.py").write_text("VERSION = 1\n")
    (root / "src" / "kvengine" / "__init__.py").write_text("")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "tiny")
    dependency = tmp_path / "tinydep"
    dependency.mkdir()
    (dependency / "pyproject.toml").write_text(DEPENDENCY)
    (dependency / "tinydep.py").write_text("")
    wheels = tmp_path / "index-wheels"
    pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(wheels), str(dependency))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    return root


def test_a_build_holds_the_wheels_and_a_manifest_of_its_commit_and_inputs(project: Path) -> None:
    outcome = build(project, project / "ci-build", TINY)
    assert (outcome.reused, outcome.why_built) == (False, f"no earlier build in {project / 'ci-build'}")
    manifest = read_manifest(project / "ci-build")
    assert manifest == outcome.manifest
    head = git(project, "rev-parse", "HEAD")
    assert (manifest.commit, manifest.inputs_digest) == (head, inputs_digest(project, TINY))
    assert (manifest.wheel, sorted(manifest.wheels)) == (
        "ci_tool-0.1.0-py3-none-any.whl", ["ci_tool-0.1.0-py3-none-any.whl", "tinydep-1.0-py3-none-any.whl"]
    )
    assert manifest.requirements == ("tinydep==1.0", "ci-tool[test]")
    assert sorted(path.name for path in (project / "ci-build").iterdir()) == sorted([*manifest.wheels, "manifest.json"])
    assert not (project / "build").exists() and not list(project.glob("*.egg-info"))  # the checkout stays clean


def test_a_second_build_of_the_same_inputs_reuses_the_first(project: Path) -> None:
    first = build(project, project / "ci-build", TINY)
    wheel = project / "ci-build" / first.manifest.wheel
    before = wheel.stat().st_mtime_ns
    os.environ.pop("PIP_FIND_LINKS")  # a rebuild could not find tinydep now: a reuse needs nothing
    second = build(project, project / "ci-build", TINY)
    assert (second.reused, second.manifest, wheel.stat().st_mtime_ns) == (True, first.manifest, before)


@pytest.mark.parametrize("change", ["source", "missing wheel", "altered wheel", "other spec"])
def test_a_build_of_other_inputs_or_an_incomplete_one_is_built_again(project: Path, change: str) -> None:
    first = build(project, project / "ci-build", TINY)
    spec = TINY
    if change == "source":
        (project / "ci_tool" / "__init__.py").write_text("VERSION = 2\n")
    elif change == "missing wheel":
        (project / "ci-build" / "tinydep-1.0-py3-none-any.whl").unlink()
    elif change == "altered wheel":
        (project / "ci-build" / "tinydep-1.0-py3-none-any.whl").write_bytes(b"not the wheel")
    else:
        spec = BuildSpec(pins=(), extras=("test",))
    again = build(project, project / "ci-build", spec)
    assert again.reused is False
    expected = "is of other inputs" if change in ("source", "other spec") else "lacks tinydep-1.0-py3-none-any.whl"
    assert expected in again.why_built
    assert (again.manifest.inputs_digest != first.manifest.inputs_digest) == (change in ("source", "other spec"))
    assert read_manifest(project / "ci-build").wheels == again.manifest.wheels  # the folder holds the new build


def test_a_runner_restores_the_build_it_kept_of_the_same_inputs_and_builds_other_inputs(
    project: Path, tmp_path: Path
) -> None:
    kept = tmp_path / "kept"
    first = build(project, project / "ci-build", TINY, kept=kept)
    assert (first.reused, sorted(path.name for path in kept.iterdir())) == (False, [first.manifest.inputs_digest])
    shutil.rmtree(project / "ci-build")  # the next run's workspace: a fresh checkout
    os.environ.pop("PIP_FIND_LINKS")  # a rebuild could not find tinydep now: a restore needs nothing
    again = build(project, project / "ci-build", TINY, kept=kept)
    assert (again.reused, again.restored_from, again.manifest) == (True, kept, first.manifest)
    (project / "ci_tool" / "__init__.py").write_text("VERSION = 2\n")  # other inputs: the kept build does not serve
    with pytest.raises(BuildError, match="pip wheel"):
        build(project, project / "ci-build", TINY, kept=kept)


def test_a_damaged_kept_build_is_made_again_and_kept_in_its_place(project: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    first = build(project, project / "ci-build", TINY, kept=kept)
    restored = project / "ci-build" / "tinydep-1.0-py3-none-any.whl"
    restored.write_bytes(b"altered in a workspace")  # a copy: the kept build is untouched
    kept_wheel = kept / first.manifest.inputs_digest / restored.name
    assert kept_wheel.read_bytes() != restored.read_bytes()
    kept_wheel.write_bytes(b"damaged on the runner")
    shutil.rmtree(project / "ci-build")
    again = build(project, project / "ci-build", TINY, kept=kept)
    assert (again.reused, again.restored_from) == (False, None)
    assert not list(project.glob("ci-build.partial"))
    assert build(project, project / "tmp-build", TINY, kept=kept).restored_from == kept  # kept whole again


def test_a_runner_keeps_its_three_most_recently_used_builds(project: Path, tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    digests = []
    for version in range(4):
        (project / "ci_tool" / "__init__.py").write_text(f"VERSION = {version}\n")
        digests.append(build(project, project / "ci-build", TINY, kept=kept).manifest.inputs_digest)
    assert sorted(path.name for path in kept.iterdir()) == sorted(digests[1:])


@pytest.fixture(scope="session")
def uv_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """uv's wheel, as the stages pin it, from the index (or pip's cache): the one test that needs it reaches the
    index, whatever `project` set."""
    folder = tmp_path_factory.mktemp("uv")
    environment = {name: value for name, value in os.environ.items() if name not in ("PIP_NO_INDEX", "PIP_FIND_LINKS")}
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(folder), UV_PIN]
    subprocess.run(command, env=environment, check=True, capture_output=True, timeout=300)
    (wheel,) = folder.glob("uv-*.whl")
    return wheel


def stage_install(stage: Path, spec: BuildSpec, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The stages' install command for `spec`, run in `stage` (which holds the build in ci-build/)."""
    return subprocess.run(["bash", "-e", "-c", pip_install_command(spec)], cwd=stage, env=environment,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


@pytest.mark.parametrize("spec", [TINY, TINY_BY_UV], ids=["pip", "uv"])
def test_a_stage_installs_from_the_build_alone_with_every_index_unreachable(
    spec: BuildSpec, project: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if spec.installer is not None:
        shutil.copy(request.getfixturevalue("uv_wheel"), tmp_path / "index-wheels")
    build(project, project / "ci-build", spec)
    stage = tmp_path / "stage"  # another agent's checkout: the build folder copied in
    stage.mkdir()
    shutil.copytree(project / "ci-build", stage / "ci-build")
    broken, decoys = "http://127.0.0.1:9/simple", str(tmp_path / "index-wheels")  # nothing listens on port 9
    environment = {**os.environ, "PIP_INDEX_URL": broken, "PIP_EXTRA_INDEX_URL": broken, "PIP_FIND_LINKS": decoys,
                   "PIP_CONFIG_FILE": "", "UV_INDEX_URL": broken, "UV_DEFAULT_INDEX": broken,
                   "UV_EXTRA_INDEX_URL": broken, "UV_FIND_LINKS": decoys}  # fmt: skip
    environment.pop("PIP_NO_INDEX")  # the command itself must refuse the index, and ignore the wheel folders
    done = stage_install(stage, spec, environment)
    assert done.returncode == 0, done.stdout + done.stderr
    listed = subprocess.run([str(stage / ".venv/bin/python"), "-m", "pip", "list", "--format", "json"],
                            capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
    installed = {entry["name"]: entry["version"] for entry in json.loads(listed.stdout)}
    assert (installed.get("ci-tool"), installed.get("tinydep")) == ("0.1.0", "1.0")
    assert ("uv" in installed) == (spec.installer is not None)
    # the wheel folders the variables name were not used: with the build's tinydep gone (its installer kept),
    # the same command finds none
    (stage / "ci-build" / "tinydep-1.0-py3-none-any.whl").unlink()
    again = stage_install(stage, spec, environment)
    assert again.returncode != 0 and "tinydep" in again.stderr, again.stderr


def test_a_runner_that_keeps_uvs_cache_installs_each_commits_own_build(
    project: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A self-hosted runner checks every commit out at the same path and keeps its home. uv keys the wheels of a
    find-links folder by the folder's path and the file's name, which a new commit of the same version keeps:
    read from a kept cache, the stage would test the last commit's code. The install must read the build."""
    shutil.copy(request.getfixturevalue("uv_wheel"), tmp_path / "index-wheels")
    stage = tmp_path / "stage"
    stage.mkdir()
    environment = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "kept-uv-cache")}
    seen = []
    for version in (2, 3):
        (project / "ci_tool" / "__init__.py").write_text(f"VERSION = {version}\n")
        git(project, "commit", "-q", "-am", f"version {version}")
        build(project, project / "ci-build", TINY_BY_UV)
        shutil.rmtree(stage / "ci-build", ignore_errors=True)  # the runner's fresh download of the build
        shutil.copytree(project / "ci-build", stage / "ci-build")
        installed = stage_install(stage, TINY_BY_UV, environment)
        shown = subprocess.run([str(stage / ".venv/bin/python"), "-c", "import ci_tool; print(ci_tool.VERSION)"],
                               cwd=tmp_path, capture_output=True, text=True, check=False)  # fmt: skip
        seen.append((installed.returncode, shown.stdout.strip() or installed.stderr + shown.stderr))
    assert seen == [(0, "2"), (0, "3")]
    assert not (tmp_path / "kept-uv-cache").exists() or not any((tmp_path / "kept-uv-cache").rglob("*.py"))


def test_check_accepts_the_checkouts_build_and_refuses_another(project: Path) -> None:
    outcome = build(project, project / "ci-build", TINY)
    assert check(project, project / "ci-build", TINY) == outcome.manifest
    (project / "README.md").write_text("# tiny, changed\n")
    with pytest.raises(BuildError) as refused:
        check(project, project / "ci-build", TINY)
    digest, built = inputs_digest(project, TINY), outcome.manifest
    assert str(refused.value) == (
        f"{project / 'ci-build' / 'manifest.json'}: expected the build of this checkout's inputs {digest[:12]}, "
        f"found the build of inputs {built.inputs_digest[:12]} ({built.describe()}) Hint: install from this "
        "commit's build, or run `ci-tool build` in this checkout"
    )


def stage_build(root: Path, folder: Path) -> BuildManifest:
    """A build folder as `ci-tool build` leaves it for the project's spec: a manifest of root's real inputs'
    digest and one wheel file with its sha256 (what reuse and --check read; the wheel's content is not)."""
    folder.mkdir()
    wheel = folder / "ci_tool-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"a wheel")
    spec = project_build(root)
    manifest = BuildManifest(
        git(root, "rev-parse", "HEAD"), inputs_digest(root, spec), "3.11-x86_64", spec.requirements, wheel.name,
        {wheel.name: hashlib.sha256(b"a wheel").hexdigest()},
    )  # fmt: skip
    write_manifest(folder, manifest)
    return manifest


def test_the_cli_reuses_a_build_of_this_checkout_and_checks_it(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    manifest = stage_build(project, project / "ci-build")
    assert (main(["build"]), capsys.readouterr().out) == (0, f"reused the build in ci-build: {manifest.describe()}\n")
    assert (main(["build", "--check"]), capsys.readouterr().out) == (
        0, f"ci-build is this checkout's build: {manifest.describe()}\n"
    )  # fmt: skip
    assert main(["build", "--check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs_digest"] == manifest.inputs_digest
    (project / "ci_tool" / "__init__.py").write_text("VERSION = 2\n")
    assert main(["build", "--check"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: ci-build/manifest.json: expected the build of this checkout's inputs "), error


def test_the_cli_restores_a_build_the_runner_kept(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(project)
    kept = tmp_path / "kept"
    kept.mkdir()
    manifest = stage_build(project, kept / inputs_digest(project, project_build(project)))
    monkeypatch.setenv("CI_TOOL_KEPT_BUILDS", str(kept))
    assert (main(["build"]), capsys.readouterr().out) == (
        0, f"restored ci-build from the build kept in {kept}: {manifest.describe()}\n"
    )  # fmt: skip
    assert read_manifest(project / "ci-build") == manifest


def test_the_cli_builds_what_the_projects_build_table_names(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    table = '\n[tool.ci-tool.build]\npins = ["tinydep==1.0"]\nextras = ["test"]\n'
    (project / "pyproject.toml").write_text(PYPROJECT + table)
    assert project_build(project) == TINY
    assert main(["build"]) == 0, capsys.readouterr().err
    manifest = read_manifest(project / "ci-build")
    assert (manifest.requirements, sorted(manifest.wheels)) == (
        ("tinydep==1.0", "ci-tool[test]"), ["ci_tool-0.1.0-py3-none-any.whl", "tinydep-1.0-py3-none-any.whl"]
    )


def test_a_project_without_a_build_table_builds_itself_alone(project: Path) -> None:
    assert project_build(project) == BuildSpec(pins=(), extras=(), installer=None, project="ci-tool")
    assert pip_install_command(project_build(project)).endswith("--find-links ci-build ci-tool")
    # with no installer named, the jobs that test nothing set ci-tool up with pip from the checkout too
    pip = "python3 -m venv --clear .venv && .venv/bin/pip install --quiet"
    assert select_setup_command(project_build(project)) == f"{pip} '.[postgres]'"


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("pins = 'torch'", "[tool.ci-tool.build] pins: expected a list of non-empty strings, found 'torch'"),
        ("extras = ['engine', '']", "[tool.ci-tool.build] extras: expected a list of non-empty strings, found "
         "['engine', '']"),
        ("installer = 3", '[tool.ci-tool.build] installer: expected a requirement such as "uv==0.13.9", found 3'),
        ("pin = ['torch']", "[tool.ci-tool.build]: expected the keys pins, extras and installer, found pin"),
    ],
    ids=["pins not a list", "an empty extra", "installer not a string", "unknown key"],
)  # fmt: skip
def test_a_build_table_that_is_not_one_is_refused_saying_where(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, table: str, expected: str
) -> None:
    monkeypatch.chdir(project)
    (project / "pyproject.toml").write_text(f"{PYPROJECT}\n[tool.ci-tool.build]\n{table}\n")
    assert main(["build"]) == 1
    assert capsys.readouterr().err == f"error: pyproject.toml {expected}\n"


def test_the_cli_says_where_a_build_folder_has_no_manifest(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["build", "--check", "--output", "elsewhere"]) == 1
    assert capsys.readouterr().err == (
        "error: elsewhere/manifest.json: expected a build's manifest, found no file Hint: run `ci-tool build` first\n"
    )
