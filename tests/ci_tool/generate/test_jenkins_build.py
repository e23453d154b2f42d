"""Build once, test many on Jenkins, in the DSL stub with the Copy Artifact plugin modelled: L0_MergeRequest's
Build stage archives the architecture's build folder and hands its place to L0_Test; a later build of the
same commit copies that folder from the earlier build's archive and the real `ci-tool build` reuses it; a
build of another commit copies nothing; each L0_Test stage copies the build into ci-build/ and installs
from it, and the real `ci-tool build --check` accepts it as its checkout's.

The scenarios run in order in one JVM: the second reads the archive the first left.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.build.inputs import inputs_digest
from ci_tool.build.manifest import BuildManifest, write_manifest
from ci_tool.build.spec import build_setup_command, install_command, project_build
from ci_tool.layout import PACKAGE_SOURCES
from tests.helpers.generate import REPOSITORY_BUILD

ROOT = Path(__file__).resolve().parents[3]
MERGE_REQUEST = "jenkins/L0_MergeRequest.groovy"
TEST_JOB = "jenkins/L0_Test.groovy"
COMMIT, OTHER_COMMIT = "a" * 40, "b" * 40
FOLDER = "ci-build-x86_64"  # the x86_64 build in L0_MergeRequest's archive
WHEEL = "ci_tool-0.1.0-py3-none-any.whl"
SELECTION = {"stages": ["A10-PyTorch-1"], "blocked": [], "fail_fast": True, "stage_run_args": []}


def checkout(make_workspace, name: str) -> Path:  # type: ignore[no-untyped-def]
    """A checkout with this repository's package sources (what a build's inputs' digest reads)."""
    workspace: Path = make_workspace(name)
    for source in PACKAGE_SOURCES:
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, workspace / source, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / source, workspace / source)
    (workspace / "selection.json").write_text(json.dumps(SELECTION))  # as the selection left it
    return workspace


def made_build(root: Path, folder: Path) -> None:
    """The build folder `ci-tool build` leaves for root's inputs: its manifest (root's real inputs' digest)
    and a wheel with its sha256; reuse and --check read those, not the wheel's content."""
    folder.mkdir()
    (folder / WHEEL).write_bytes(b"a wheel")
    digest = hashlib.sha256(b"a wheel").hexdigest()
    spec = project_build(root)
    manifest = BuildManifest(COMMIT, inputs_digest(root, spec), "3.11-x86_64", spec.requirements, WHEEL,
                             {WHEEL: digest})  # fmt: skip
    write_manifest(folder, manifest)


@pytest.fixture(scope="module")
def runs(generated: dict, run_stub, make_workspace, tmp_path_factory: pytest.TempPathFactory) -> dict:  # type: ignore[no-untyped-def, type-arg]
    archives = tmp_path_factory.mktemp("archives")
    first, second, other, stage, bad = (checkout(make_workspace, name) for name in
                                        ("first", "second", "other", "stage", "bad"))  # fmt: skip
    made_build(first, first / FOLDER)  # what the first build's `ci-tool build` made
    made_build(other, other / FOLDER)  # what `ci-tool build` makes for the other commit (not run here)
    earlier = {"L0_MergeRequest": [{"number": 41, "params": {"HEAD_SHA": COMMIT}, "archive": str(archives / "41")}]}
    merge_request = {"script": str(generated["small"].path(MERGE_REQUEST)), "files": {"selection.json": SELECTION}}
    l0_test = {"script": str(generated["small"].path(TEST_JOB))}
    build_params = {"BUILD_JOB": "L0_MergeRequest", "BUILD_RUN": "41", "BUILD_FOLDER": FOLDER}
    stages = {"STAGES": '["CPU-Generic-1"]', "FAIL_FAST": True, "STAGE_RUN_ARGS": "[]"}
    scenarios = {
        "first": {**merge_request, "workspace": str(first), "archive": str(archives / "41"),
                  "params": {"REQUEST": "{}", "LABELS": "[]", "HEAD_SHA": COMMIT},
                  "env": {"JOB_NAME": "L0_MergeRequest", "BUILD_NUMBER": "41"}},
        "second": {**merge_request, "workspace": str(second), "archive": str(archives / "42"), "builds": earlier,
                   "params": {"REQUEST": "{}", "LABELS": "[]", "HEAD_SHA": COMMIT},
                   "env": {"JOB_NAME": "L0_MergeRequest", "BUILD_NUMBER": "42"}, "execute": ["ci-tool build --output"]},
        "other": {**merge_request, "workspace": str(other), "archive": str(archives / "43"), "builds": earlier,
                  "params": {"REQUEST": "{}", "LABELS": "[]", "HEAD_SHA": OTHER_COMMIT},
                  "env": {"JOB_NAME": "L0_MergeRequest", "BUILD_NUMBER": "43"}},
        "stage": {**l0_test, "workspace": str(stage), "builds": earlier, "params": stages | build_params},
        "bad": {**l0_test, "workspace": str(bad), "builds": earlier,
                "params": stages | build_params | {"BUILD_RUN": "41; touch /tmp/x"}},
    }  # fmt: skip
    results = run_stub(list(scenarios.values()))
    return {name: {**result, "workspace": Path(str(scenario["workspace"])), "archives": archives}
            for (name, scenario), result in zip(scenarios.items(), results, strict=True)}  # fmt: skip


def calls(run: dict, step: str) -> list[dict]:  # type: ignore[type-arg]
    return [call for call in run["calls"] if call["step"] == step]


def files(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


def test_the_build_stage_builds_archives_the_folder_and_hands_its_place_to_l0_test(runs: dict) -> None:  # type: ignore[type-arg]
    run = runs["first"]
    assert run["error"] is None
    build_stage = run["calls"].index({"step": "stage", "name": "[Build-x86_64] Build"})
    steps = [(call["step"], call.get("script") or call.get("label") or call.get("artifacts"))
             for call in run["calls"][build_stage - 1 : build_stage + 8]]  # fmt: skip
    assert steps == [
        ("node", "cpu"),
        ("stage", None),
        ("checkout", None),
        ("sh", 'git fetch --no-tags origin -- "$HEAD_SHA" && git checkout --quiet --detach "$HEAD_SHA"'),
        ("sh", f"rm -rf '{FOLDER}'"),
        ("copyArtifacts", None),
        ("sh", build_setup_command(REPOSITORY_BUILD)),
        ("sh", f".venv/bin/ci-tool build --output {FOLDER}"),
        ("archiveArtifacts", f"{FOLDER}/*"),
    ]
    (copy,) = calls(run, "copyArtifacts")  # the first build of the commit: no earlier one to copy
    assert (copy["projectName"], copy["parameters"], copy["build"], copy["copied"]) == (
        "L0_MergeRequest", f"HEAD_SHA={COMMIT}", None, 0
    )
    assert files(run["archives"] / "41") == [f"{FOLDER}/{WHEEL}", f"{FOLDER}/manifest.json", "selection.json"]
    (l0_test,) = calls(run, "build")
    assert {key: l0_test["parameters"][key] for key in ("BUILD_JOB", "BUILD_RUN", "BUILD_FOLDER")} == {
        "BUILD_JOB": "L0_MergeRequest", "BUILD_RUN": "41", "BUILD_FOLDER": FOLDER
    }


def test_a_later_build_of_the_same_commit_copies_the_earlier_build_and_ci_tool_reuses_it(runs: dict) -> None:  # type: ignore[type-arg]
    run = runs["second"]
    assert run["error"] is None
    (copy,) = calls(run, "copyArtifacts")
    assert (copy["selector"], copy["build"], copy["copied"]) == ({"selector": "lastWithArtifacts"}, 41, 2)
    (built,) = calls(run, "executed")  # the real `ci-tool build`, in this build's checkout
    assert (built["exitCode"], built["stderr"]) == (0, "")
    assert built["stdout"].startswith(f"reused the build in {FOLDER}: commit {COMMIT[:12]}, inputs "), built["stdout"]
    assert files(run["archives"] / "42") == files(run["archives"] / "41")  # archived again, for its own L0_Test


def test_a_build_of_another_commit_copies_nothing(runs: dict) -> None:  # type: ignore[type-arg]
    run = runs["other"]
    assert run["error"] is None
    (copy,) = calls(run, "copyArtifacts")
    assert (copy["parameters"], copy["build"], copy["copied"]) == (f"HEAD_SHA={OTHER_COMMIT}", None, 0)
    assert [call["script"] for call in calls(run, "sh")][-1] == f".venv/bin/ci-tool build --output {FOLDER}"


def test_each_stage_copies_the_pipelines_build_and_installs_from_it(runs: dict) -> None:  # type: ignore[type-arg]
    run = runs["stage"]
    assert run["error"] is None
    sh = [call["script"] for call in calls(run, "sh")]
    assert sh[:3] == ["rm -rf 'results/CPU-Generic-1'", "rm -rf 'ci-build'", install_command(REPOSITORY_BUILD)]
    (copy,) = calls(run, "copyArtifacts")
    assert (copy["projectName"], copy["selector"], copy["filter"], copy["copied"]) == (
        "L0_MergeRequest", {"selector": "specific", "number": "41"}, f"{FOLDER}/*", 2
    )
    assert files(run["workspace"] / "ci-build") == [WHEEL, "manifest.json"]  # flattened into ci-build/
    check = subprocess.run(
        [sys.executable, "-m", "ci_tool", "build", "--check"], cwd=run["workspace"], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert (check.returncode, check.stdout.split(":")[0]) == (0, "ci-build is this checkout's build"), check.stderr


def test_a_build_number_that_is_no_number_never_reaches_a_step(runs: dict) -> None:  # type: ignore[type-arg]
    run = runs["bad"]
    assert run["error"] == (
        f"BUILD_RUN, BUILD_FOLDER: expected a build number and one of {FOLDER}, ci-build-aarch64, "
        f"found 41; touch /tmp/x, {FOLDER}"
    )
    assert calls(run, "copyArtifacts") == [] and calls(run, "node") == []
