"""Jenkins and GitHub Actions act on the same selection: one request (with labels and changed files) run
through both generated pipelines, each asking the real `ci-tool stage select`, starts the same stages,
blocks the same ones, and carries the same fail-fast and stage options; and both carry the catalog's
facts for every stage.

Jenkins runs in the DSL stub (pipeline_stub.groovy) with its `stage select` and `git` steps executed for
real; GitHub's plan job runs its shell steps for real (conftest.run_plan_job).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ci_tool.generate.context import CatalogStage, github_runs_on
from ci_tool.history.store import HistoryStore
from ci_tool.layout import ACTIONS_SELECTION_ARTIFACT, SELECTION_ARTIFACT

MERGE_REQUEST = "jenkins/L0_MergeRequest.groovy"
TEST_JOB = "jenkins/L0_Test.groovy"
WORKFLOW = ".github/workflows/l0-test.yml"
FULL = "ci: full pre-merge approved"
POST = "ci: post-merge approved"

# id -> (request flags, labels, changed files)
REQUESTS: dict[str, tuple[dict[str, object], list[str], list[str]]] = {
    "bare run": ({}, [], []),
    "post-merge, labelled": ({"post_merge": True}, [POST], []),
    "post-merge, unlabelled": ({"post_merge": True}, [], []),
    "globs": ({"stage_list": ["A10-*", "*-4_GPUs-*"]}, [FULL], []),
    "multi-GPU by name, unlabelled": ({"extra_stage": ["GB200-4_GPUs-PyTorch-1"]}, [], []),
    "gpu type and options": ({"gpu_type": ["A10", "GH200"], "detailed_log": True, "disable_fail_fast": True}, [], []),
    "tag trigger": ({}, [FULL], ["src/models/deepseek.py"]),
    "multi-GPU path, unlabelled": ({}, [], ["src/dist/group.py", "README.md"]),
    "docs only": ({}, [], ["docs/guide.md"]),
    "old multi-GPU spelling": ({"multi_gpu_test": True}, [FULL], []),
    "only perf sanity, post-merge": ({"only_perf_sanity_test": True, "post_merge": True}, [POST], []),
    "empty stage list": ({"stage_list": []}, [], []),
    "nightly release mode": ({"run_mode": "nightly_release"}, [], []),
    "release check mode": ({"run_mode": "release_check", "post_merge": True}, [POST], []),
}


def request_json(flags: dict[str, object]) -> str:
    """CI's REQUEST for a table row: its flags, and its run mode (a key of the request, not a flag) when set."""
    flags = dict(flags)
    mode = flags.pop("run_mode", None)
    return json.dumps({"command": "run", "flags": flags, **({"run_mode": mode} if mode else {})})


def git_workspace(make_workspace, name: str, changed: list[str]) -> Path:  # type: ignore[no-untyped-def]
    """A checkout whose branch changes `changed` against `main`, with itself as its `origin`."""
    workspace: Path = make_workspace(name)
    commands = [
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", "commit", "-q", "-m", "base"],
        ["git", "checkout", "-q", "-b", "pull-request"],
    ]
    for command in commands:
        subprocess.run(command, cwd=workspace, check=True, capture_output=True, timeout=60)
    for path in changed:
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text("changed\n")
    if changed:
        subprocess.run(["git", "add", "-A"], cwd=workspace, check=True, timeout=60)
        subprocess.run(
            ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com", "commit", "-q", "-m", "change"],
            cwd=workspace, check=True, timeout=60,
        )  # fmt: skip
    subprocess.run(["git", "remote", "add", "origin", str(workspace)], cwd=workspace, check=True, timeout=60)
    return workspace


@pytest.fixture(scope="module")
def jenkins(generated: dict, run_stub, make_workspace) -> dict[str, dict[str, object]]:  # type: ignore[no-untyped-def]
    """Every request through L0_MergeRequest, in one JVM."""
    scenarios = []
    for name, (flags, labels, changed) in REQUESTS.items():
        workspace = git_workspace(make_workspace, f"jenkins-{name}", changed)
        scenarios.append({
            "script": str(generated["small"].path(MERGE_REQUEST)),
            "params": {"REQUEST": request_json(flags), "LABELS": json.dumps(labels)},
            "env": {"CHANGE_TARGET": "main"} if changed else {},
            "execute": ["stage select", "git fetch"],
            "workspace": str(workspace),
        })  # fmt: skip
    return dict(zip(REQUESTS, run_stub(scenarios), strict=True))


def jenkins_view(run: dict[str, object]) -> dict[str, object]:
    calls = run["calls"]
    assert isinstance(calls, list) and run["error"] is None, run
    builds = [call for call in calls if call["step"] == "build"]
    blocked = sorted(
        part.split(" (needs the label ")[0]
        for call in calls
        if call["step"] == "echo" and call["message"].startswith("Waiting for an approval label")
        for part in call["message"].split(": ", 1)[1].split(", ")
    )
    return {
        "stages": sorted(stage for call in builds for stage in call["stages"]),
        "blocked": blocked,
        "fail_fast": {call["failFast"] for call in builds} or None,
        "stage_run_args": {tuple(call["stageRunArgs"]) for call in builds} or None,
    }


def github_view(outputs: dict[str, str]) -> dict[str, object]:
    stages = [row["stage"] for key, value in outputs.items() if key.endswith(tuple("0123456789")) for row in
              json.loads(value)]  # fmt: skip
    return {
        "stages": sorted(stages),
        "blocked": sorted(entry["stage"] for entry in json.loads(outputs["blocked"])),
        "fail_fast": {outputs["fail_fast"] == "true"} if stages else None,
        "stage_run_args": {tuple(outputs["stage_run_args"].split())} if stages else None,
    }


@pytest.mark.parametrize("name", REQUESTS, ids=REQUESTS)
def test_both_pipelines_start_and_block_the_same_stages_the_same_way(
    generated: dict,
    jenkins: dict,
    make_workspace,
    plan_job,
    name: str,  # type: ignore[no-untyped-def]
) -> None:
    flags, labels, changed = REQUESTS[name]
    workspace = git_workspace(make_workspace, f"github-{name}", changed)
    plan = plan_job(
        generated["small"].files[WORKFLOW],
        workspace,
        request=request_json(flags),
        labels=json.dumps(labels),
        base_ref="main" if changed else "",
    )
    assert plan.code == 0, plan.log
    assert jenkins_view(jenkins[name]) == github_view(dict(plan.outputs))


def test_the_requests_cover_what_the_engines_must_agree_on(jenkins: dict) -> None:
    """Guard against a table that proves nothing: some request blocks, some trigger on files, options vary."""
    views = [jenkins_view(run) for run in jenkins.values()]
    assert any(view["blocked"] for view in views)
    assert {frozenset(view["fail_fast"] or ()) for view in views} >= {frozenset({True}), frozenset({False})}
    assert any(view["stage_run_args"] == {("--detailed-log",)} for view in views)
    assert "DGX_H100-4_GPUs-PyTorch-DeepSeek-1" in jenkins_view(jenkins["tag trigger"])["stages"]  # type: ignore[operator]
    assert jenkins_view(jenkins["docs only"])["stages"] == ["CPU-Generic-1"]
    old_spelling = jenkins_view(jenkins["old multi-GPU spelling"])["stages"]
    assert old_spelling and all("_GPUs" in name for name in old_spelling)  # type: ignore[union-attr]
    assert jenkins_view(jenkins["empty stage list"])["stages"] == jenkins_view(jenkins["bare run"])["stages"]
    perf = jenkins_view(jenkins["only perf sanity, post-merge"])["stages"]
    assert perf == ["DGX_B200-PyTorch-PerfSanity-Post-Merge-1"]


def expected(spec: CatalogStage) -> dict[str, object]:
    """The facts both CI systems must carry, straight from the catalog and the stage-name grammar."""
    stage = spec.name
    return {
        "platform": spec.platform,
        "context": spec.context,
        "gpu_count": stage.gpu_count,
        "shard": stage.shard or 1,
        "shard_count": spec.splits,
        "mode": stage.mode.value,
        "timeout_minutes": spec.timeout_minutes,
    }


@pytest.fixture(scope="module")
def tables(generated: dict, run_stub) -> dict[str, dict[str, object]]:  # type: ignore[no-untyped-def]
    """The Jenkins stage tables of every golden catalog, read by evaluating the generated methods."""
    scenarios = {
        f"{catalog}:{method}": {"script": str(generated[catalog].path(script)), "method": method}
        for catalog in ("small", "split")
        for script, method in ((TEST_JOB, "stageTable"), (MERGE_REQUEST, "stagePhases"))
    }
    return {key: result["table"] for key, result in zip(scenarios, run_stub(list(scenarios.values())), strict=True)}


@pytest.mark.parametrize("catalog", ["small", "split"])
def test_jenkins_and_github_agree_with_the_catalog_on_every_stage(
    generated: dict,
    tables: dict,
    make_workspace,
    plan_job,
    catalog: str,  # type: ignore[no-untyped-def]
) -> None:
    """Jenkins' facts come from evaluating the generated Groovy; GitHub's from its plan job asked for every
    stage (`--stage-list "*"`, approved)."""
    specs = generated[catalog].specs
    jenkins, phases = tables[f"{catalog}:stageTable"], tables[f"{catalog}:stagePhases"]
    workspace = make_workspace(f"agree-{catalog}")
    source = Path(__file__).parent / "catalogs" / catalog / "stages.yml"
    (workspace / "jenkins" / "stages.yml").write_text(source.read_text())
    request = json.dumps({"command": "run", "flags": {"stage_list": ["*"]}})
    plan = plan_job(generated[catalog].files[WORKFLOW], workspace, request=request, labels=json.dumps([POST]))
    assert plan.code == 0, plan.log
    github = {row["stage"]: row for key in plan.outputs if key[-1].isdigit() for row in plan.matrix(key)}
    names = [spec.name.name for spec in specs]
    narrowed = [spec.name.name for spec in generated[catalog].narrowed]
    assert (list(jenkins), list(phases), sorted(github)) == (names + narrowed, names + narrowed, sorted(names))
    found = {spec.name.name: engines_facts(jenkins, phases, github, spec.name.name) for spec in specs}
    assert found == {spec.name.name: catalog_facts(spec) for spec in specs}
    # a `-cbts` stage runs where its shard of the family runs, as long, on the same executor
    assert narrowed and {name: (jenkins[name], phases[name]) for name in narrowed} == {
        name: (jenkins[name.removesuffix("-cbts")], phases[name.removesuffix("-cbts")]) for name in narrowed
    }


def engines_facts(jenkins: dict, phases: dict, github: dict, name: str) -> dict[str, object]:  # type: ignore[type-arg]
    """What the generated Jenkins table, its phases and the GitHub plan say of stage `name`."""
    row = jenkins[name]
    return {
        "jenkins": {
            "platform": row["platform"],
            "context": row["context"],
            "gpu_count": row["gpuCount"],
            "shard": row["shard"],
            "shard_count": row["shardCount"],
            "mode": row["mode"],
            "timeout_minutes": row["timeoutMinutes"],
        },
        "jenkins_label": row["label"],
        "executor": (row["executor"], github[name]["executor"]),
        "phase": phases[name],
        "github": (github[name]["runs_on"], github[name]["timeout_minutes"]),
    }


def catalog_facts(spec: CatalogStage) -> dict[str, object]:
    """What the catalog says the engines must say of `spec`."""
    return {
        "jenkins": expected(spec),
        # a stage that runs alone (perf, perf-sanity) asks for its platform's perf pool, no other stage does
        "jenkins_label": "slurm" if spec.executor == "slurm" else
                         f"{spec.platform}-perf" if spec.name.policy.runs_alone else spec.platform,
        "executor": (spec.executor, spec.executor),
        "phase": {"arch": spec.arch, "phase": "Multi-GPU" if spec.name.multi_gpu else "Single-GPU"},
        "github": (github_runs_on(spec), spec.timeout_minutes),
    }


NARROWED_STAGE = "CPU-Generic-1-cbts"


def unwaive_workspace(make_workspace, name: str) -> Path:  # type: ignore[no-untyped-def]
    """A pull request that lifts the CPU waive of tests/b.py: change-based selection narrows CPU-Generic to
    that one test, a `-cbts` stage, and drops every other family."""
    workspace: Path = make_workspace(name)
    waives = workspace / "test-db" / "waives.txt"
    waives.write_text("full:CPU/tests/b.py SKIP (https://bugs.example/1)\n")
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.com"]
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"],
                    ["checkout", "-q", "-b", "pull-request"]):  # fmt: skip
        subprocess.run([*git, *command], cwd=workspace, check=True, capture_output=True, timeout=60)
    waives.write_text("")
    subprocess.run([*git, "commit", "-q", "-am", "lift the CPU waive"], cwd=workspace, check=True, timeout=60)
    subprocess.run(["git", "remote", "add", "origin", str(workspace)], cwd=workspace, check=True, timeout=60)
    return workspace


def ran_tests(results: Path) -> list[str]:
    """The test cases a stage's junit.xml holds."""
    text = (results / "junit.xml").read_text()
    return sorted(re.findall(r'<testcase [^>]*name="([^"]+)"', text))


def recorded_inputs(workspace: Path, stage: str) -> str:
    """The inputs digest the stage's run recorded in the workspace's own history (what reuse matches)."""
    with HistoryStore(workspace / ".ci-tool" / "history.sqlite", read_only=True) as store:
        ((digest,),) = store.rows("SELECT inputs_digest FROM stages WHERE name = ?", (stage,))
        return str(digest)


def test_a_narrowed_change_runs_only_its_cbts_shard_in_both_pipelines_as_its_plan_narrowed_it(
    generated: dict, run_stub, make_workspace, plan_job  # type: ignore[no-untyped-def]
) -> None:
    """One pull request through both generated pipelines, every step that decides run for real: each plan
    names only CPU-Generic-1-cbts; Jenkins hands L0_Test the run record (SELECTION) and GitHub's stage job
    reads the plan job's (the ci-tool-selection artifact); each stage job runs the one test the plan
    narrowed to, with the same inputs digest."""
    jenkins_checkout = unwaive_workspace(make_workspace, "narrowed-jenkins")
    (merge,) = run_stub([{
        "script": str(generated["small"].path(MERGE_REQUEST)), "params": {"REQUEST": request_json({}), "LABELS": "[]"},
        "env": {"CHANGE_TARGET": "main"}, "execute": ["stage select", "git fetch"], "workspace": str(jenkins_checkout),
    }])  # fmt: skip
    (build,) = [call for call in merge["calls"] if call["step"] == "build"]  # type: ignore[union-attr]
    assert build["stages"] == [NARROWED_STAGE]
    record = json.loads(build["parameters"]["SELECTION"])
    assert record["cbts"]["families"]["CPU-Generic"]["filter"]["paths"] == [{"path": "tests/b.py", "gpu": "CPU"}]
    params = {name: build["parameters"][name] for name in ("STAGES", "FAIL_FAST", "STAGE_RUN_ARGS", "SELECTION")}
    (test_job,) = run_stub([{"script": str(generated["small"].path(TEST_JOB)), "params": params,
                             "execute": ["stage run"], "workspace": str(jenkins_checkout)}])  # fmt: skip
    (executed,) = [call for call in test_job["calls"] if call["step"] == "executed"]  # type: ignore[union-attr]
    assert executed["exitCode"] == 0, executed["stderr"]
    assert f"stage run '{NARROWED_STAGE}' " in executed["script"]
    assert " --selection 'selection.json'" in executed["script"]

    github_checkout = unwaive_workspace(make_workspace, "narrowed-github")
    workflow = generated["small"].files[WORKFLOW]
    plan = plan_job(workflow, github_checkout, request=request_json({}), base_ref="main")
    assert plan.code == 0, plan.log
    assert github_view(dict(plan.outputs))["stages"] == [NARROWED_STAGE]
    job = yaml.safe_load(workflow)["jobs"]["cpu_1"]
    (fetch,) = [step for step in job["steps"] if step.get("with", {}).get("name") == ACTIONS_SELECTION_ARTIFACT]
    artifact = github_checkout / fetch["with"]["path"]  # what download-artifact leaves: the plan job's files
    artifact.mkdir(parents=True)
    shutil.copy(github_checkout / SELECTION_ARTIFACT, artifact / SELECTION_ARTIFACT)
    (run_step,) = [step for step in job["steps"] if step.get("name") == "Run the stage"]
    environment = {"STAGE": NARROWED_STAGE, "EXECUTOR": "local", "STAGE_RUN_ARGS": "", "BASE_REF": ""}
    done = subprocess.run(["bash", "-e", "-c", run_step["run"]], cwd=github_checkout, env={**os.environ, **environment},
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr

    results = [checkout / "results" / NARROWED_STAGE for checkout in (jenkins_checkout, github_checkout)]
    assert [ran_tests(found) for found in results] == [["test_b"], ["test_b"]]
    digests = {recorded_inputs(checkout, NARROWED_STAGE) for checkout in (jenkins_checkout, github_checkout)}
    assert len(digests) == 1 and "" not in digests
