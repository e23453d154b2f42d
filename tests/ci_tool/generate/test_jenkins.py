"""The generated Jenkins pipelines: they compile with a real groovyc, and run correctly against a DSL stub;
and for every stage of every golden catalog, the Jenkins and GitHub definitions agree with the catalog.

The stub (pipeline_stub.groovy) records every pipeline step, so these tests check the dispatch logic
itself: stage selection from the JSON parameters, labels, timeouts, archiving, fail-fast, and the
single-GPU then multi-GPU hand-off. Its `parallel` runs the branches at the same time, as Jenkins does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ci_tool.build.spec import build_command, install_command, select_setup_command
from tests.helpers.generate import REPOSITORY_BUILD, WAIVED_ON_MAIN, PullRequestOrigin, git
from tests.helpers.jenkins_pipeline import (
    BASE,
    HEAD,
    MERGE_REQUEST,
    OLD_HEAD,
    TEST_JOB,
    commits,
    l0_test,
    merge_request,
    selection,
    steps,
)

ROOT = Path(__file__).resolve().parents[3]
JENKINS_FILES = ("jenkins/L0_Test.groovy", "jenkins/L0_MergeRequest.groovy")


@pytest.fixture(scope="module")
def compiled(
    generated: dict, groovyc: str, java_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> tuple[subprocess.CompletedProcess[str], list[str], Path]:
    """Every golden catalog's Groovy plus the repository's, compiled in one groovyc run (one JVM)."""
    sources = tmp_path_factory.mktemp("groovy-sources")
    classes = sources / "classes"
    names: list[str] = []
    for catalog, result in sorted(generated.items()):
        for target in JENKINS_FILES:
            names.append(f"{catalog}_{Path(target).stem}")
            shutil.copy(result.path(target), sources / f"{names[-1]}.groovy")
    for target in JENKINS_FILES:
        if (ROOT / target).exists():
            names.append(f"repo_{Path(target).stem}")
            shutil.copy(ROOT / target, sources / f"{names[-1]}.groovy")
    command = [groovyc, "-d", str(classes), *(str(sources / f"{name}.groovy") for name in names)]
    result = subprocess.run(command, capture_output=True, text=True, env=java_env, timeout=300)
    return result, names, classes


def test_every_generated_groovy_file_compiles(
    compiled: tuple[subprocess.CompletedProcess[str], list[str], Path],
) -> None:
    result, names, classes = compiled
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(path.stem for path in classes.glob("*.class") if "$" not in path.stem) == sorted(names)










def real_merge_request(flags: dict[str, object], labels: list[str] | None = None, **extra: object) -> dict[str, object]:
    """A merge-request run whose selection is ci-tool's own, run for real in a workspace."""
    request = json.dumps({"command": "run", "flags": flags})
    params = {"REQUEST": request, "LABELS": json.dumps(labels or [])}
    return {"script": MERGE_REQUEST, "params": params, "execute": ["stage select"], **extra}






def git_merge_request(flags: dict[str, object], **params: str) -> dict[str, object]:
    """A bot-triggered merge-request run in a clone of the `pull_request` fixture's origin, every git command
    and ci-tool's selection run for real."""
    request = json.dumps({"command": "run", "flags": flags})
    base_params = {"REQUEST": request, "LABELS": "[]", "PR_NUMBER": "7", "HEAD_SHA": HEAD, "BASE_REF": "main"}
    return {"script": MERGE_REQUEST, "params": base_params | params, "execute": ["git ", "stage select"], "git": True}


FULL = "ci: full pre-merge approved"
MULTI = "DGX_H100-4_GPUs-PyTorch-DeepSeek-1"

# Scenarios against the `small` catalog's files: id -> scenario. All run in one JVM (see `runs`).
SCENARIOS: dict[str, dict[str, object]] = {
    "test-passes": l0_test(["A10-PyTorch-1", "CPU-Generic-1"]),
    "test-perf-label": l0_test(["H100_PCIe-PyTorch-Perf-1"]),
    "test-slurm": l0_test(["GB200-8_GPUs-2_Nodes-PyTorch-1"]),
    # the three stages start; A10-PyTorch-2 fails while the other two still run: fail-fast aborts them
    "test-fail-fast": l0_test(
        ["A10-PyTorch-1", "A10-PyTorch-2", "CPU-Generic-1"],
        failing_stages=["A10-PyTorch-2"],
        running_stages=["A10-PyTorch-1", "CPU-Generic-1"],
        concurrent_stages=["A10-PyTorch-1", "A10-PyTorch-2", "CPU-Generic-1"],
    ),
    # each stage's run waits until the other's has started: they pass only when the branches overlap
    "test-concurrent": l0_test(
        ["A10-PyTorch-1", "CPU-Generic-1"], concurrent_stages=["A10-PyTorch-1", "CPU-Generic-1"]
    ),
    "test-no-fail-fast": l0_test(
        ["A10-PyTorch-1", "A10-PyTorch-2", "CPU-Generic-1"], fail_fast=False, failing_stages=["A10-PyTorch-2"]
    ),
    # A10-PyTorch-1's agent is lost mid-run: it runs again on a fresh agent as attempt 2, which passes
    "test-agent-lost": l0_test(["A10-PyTorch-1", "CPU-Generic-1"], lost_stages={"A10-PyTorch-1": "agent"}),
    # its pod is evicted, and the test failure of its attempt 2 is fail-fast's: CPU-Generic-1, still running, aborts
    "test-agent-lost-then-tests-fail": l0_test(
        ["A10-PyTorch-1", "CPU-Generic-1"],
        lost_stages={"A10-PyTorch-1": "kubernetesAgent"},
        failing_stages=["A10-PyTorch-1-attempt-2"],
        running_stages=["CPU-Generic-1"],
        concurrent_stages=["A10-PyTorch-1-attempt-2", "CPU-Generic-1"],
    ),
    # lost on both attempts, while CPU-Generic-1 runs: no fail-fast, and the build is unstable
    "test-agent-lost-every-attempt": l0_test(
        ["A10-PyTorch-1", "CPU-Generic-1"],
        lost_stages={"A10-PyTorch-1": "agent", "A10-PyTorch-1-attempt-2": "kubernetesAgent"},
        concurrent_stages=["A10-PyTorch-1-attempt-2", "CPU-Generic-1"],
    ),
    "test-run-args": l0_test(["CPU-Generic-1"], run_args=["--detailed-log"]),
    "test-unknown-run-arg": l0_test(["CPU-Generic-1"], run_args=["--detailed-log", "; rm -rf ~"]),
    "test-unknown-stage": l0_test(["A10-PyTorch-1", "A10-Pytorch-9"]),
    "test-not-a-list": {
        "script": TEST_JOB,
        "params": {"STAGES": '{"a": 1}', "FAIL_FAST": True, "STAGE_RUN_ARGS": "[]"},
    },
    "test-nothing": l0_test([]),
    # ci-tool's real stage runner, run by the pipeline in a workspace holding the `small` catalog:
    "test-real-stage-run": l0_test(["CPU-Generic-1"], run_args=["--detailed-log"], execute=["stage run"]),
    "mr-passes": merge_request(selection(["GH200-PyTorch-1", MULTI, "A10-PyTorch-1"])),
    "mr-single-fails": merge_request(
        selection(["A10-PyTorch-1", MULTI, "GH200-PyTorch-1"]),
        failing_stages=["A10-PyTorch-1"],
        # both L0_Test runs start, and aarch64's is still going when x86_64's fails
        concurrent_stages=["A10-PyTorch-1", "GH200-PyTorch-1"],
        running_stages=["GH200-PyTorch-1"],
    ),
    "mr-concurrent": merge_request(
        selection(["A10-PyTorch-1", "GH200-PyTorch-1"]), concurrent_stages=["A10-PyTorch-1", "GH200-PyTorch-1"]
    ),
    "mr-single-fails-no-fail-fast": merge_request(
        selection(["A10-PyTorch-1", MULTI, "GH200-PyTorch-1"], fail_fast=False, stage_run_args=["--detailed-log"]),
        failing_stages=["A10-PyTorch-1"],
    ),
    "mr-unstable": merge_request(selection(["A10-PyTorch-1", MULTI]), unstable_stages=["A10-PyTorch-1"]),
    "mr-only-multi-gpu": merge_request(selection([MULTI])),
    "mr-blocked": merge_request(
        selection(["A10-PyTorch-1"], blocked=[(MULTI, FULL), ("GB200-4_GPUs-PyTorch-1", FULL)])
    ),
    "mr-unknown-stage": merge_request(selection(["A10-PyTorch-1", "B300-PyTorch-1"])),
    "mr-nothing": merge_request(selection([])),
    "mr-pull-request": merge_request(selection(["A10-PyTorch-1"]), env={"CHANGE_TARGET": "main"}),
    # ci-tool's real selection, run by the pipeline in a workspace holding the `small` catalog:
    "mr-real-default": real_merge_request({}),
    "mr-real-stage-list": real_merge_request({"stage_list": ["GB200-4_GPUs-PyTorch-1", "A10-PyTorch-2"]}, [FULL]),
    "mr-real-unlabelled-multi-gpu": real_merge_request({"stage_list": ["GB200-4_GPUs-PyTorch-1", "A10-PyTorch-2"]}),
    "mr-real-unknown-stage": real_merge_request({"stage_list": ["A10-PyTorch-9"]}),
    "mr-real-not-run": {**real_merge_request({}), "params": {"REQUEST": '{"command": "kill"}', "LABELS": "[]"}},
    "mr-real-high-priority": real_merge_request({"high_priority": True}),
    "mr-real-reuse-build": real_merge_request({"reuse_test": "12"}),
    "mr-debug": merge_request(
        {**selection(["A10-PyTorch-1"]), "queue_priority": 3, "debug_hold_minutes": 30}
    ),
    "test-debug-hold": l0_test(["A10-PyTorch-1", "CPU-Generic-1"], failing_stages=["A10-PyTorch-1"],
                               fail_fast=False, more={"DEBUG_HOLD_MINUTES": "30"},
                               env={"NODE_NAME": "a10-7", "WORKSPACE": "/agent/L0_Test"}),
    "test-bad-commit": l0_test(["CPU-Generic-1"], more={"HEAD_SHA": "--upload-pack=touch /tmp/x"}),
    # the pull request's commit, run for real: git in a clone of a repository whose pull request #7 has two
    # commits and whose main gained a waive after the pull request branched off
    "mr-git-head": git_merge_request({}),
    "mr-git-moved-on": git_merge_request({}, HEAD_SHA=OLD_HEAD),
    "mr-git-bad-base": git_merge_request({}, BASE_REF="--upload-pack=touch /tmp/x"),
    "test-git-head": l0_test(["CPU-Generic-1"], more={"HEAD_SHA": HEAD, "BASE_SHA": BASE},
                             execute=["git ", "stage run"], git=True),
}


# The stage tables of every golden catalog, read by evaluating the generated methods: id -> scenario.
TABLES: dict[str, dict[str, object]] = {
    f"{catalog}:{method}": {"script": script, "method": method, "catalog": catalog}
    for catalog in ("small", "split")
    for script, method in ((TEST_JOB, "stageTable"), (MERGE_REQUEST, "stagePhases"))
}


def _workspace(name: str, scenario: dict[str, object], make_workspace, pull_request: PullRequestOrigin) -> dict:  # type: ignore[no-untyped-def, type-arg]
    if scenario.get("git"):
        params = {key: commits(pull_request, value) if isinstance(value, str) else value
                  for key, value in dict(scenario["params"]).items()}  # type: ignore[call-overload]  # fmt: skip
        return {"workspace": str(pull_request.clone(name)), "params": params}
    return {"workspace": str(make_workspace(name))} if "execute" in scenario else {}


@pytest.fixture(scope="module")
def runs(generated: dict, run_stub, make_workspace, pull_request) -> dict[str, dict[str, object]]:  # type: ignore[no-untyped-def]
    """Every scenario and table read, in one JVM."""
    scenarios = []
    for name, scenario in (*SCENARIOS.items(), *TABLES.items()):
        script = str(generated[scenario.get("catalog", "small")].path(str(scenario["script"])))
        extra = _workspace(name, scenario, make_workspace, pull_request)
        scenarios.append({**scenario, "script": script, **extra})
    results = run_stub(scenarios)
    return {
        name: {**result, "workspace": scenario.get("workspace"), "params": scenario.get("params")}
        for name, scenario, result in zip((*SCENARIOS, *TABLES), scenarios, results, strict=True)
    }






def test_each_stage_runs_on_its_label_with_its_timeout_and_archives_its_results(runs: dict) -> None:
    run = runs["test-passes"]
    assert run["error"] is None
    assert [call for call in run["calls"] if call["step"] == "parallel"] == [
        {"step": "parallel", "branches": ["A10-PyTorch-1", "CPU-Generic-1"], "failFast": True}
    ]
    recorded = steps(run, "node", "stage", "timeout", "checkout", "sh", "junit", "archiveArtifacts")
    # without the shared history's credential no durations are exported: that agent only looks, then the stages
    assert recorded[:2] == [("node", "cpu"), ("stage", "Test")]
    a10 = recorded[2:15]
    assert a10 == [
        ("node", "a10"),
        ("stage", "A10-PyTorch-1"),
        ("timeout", 60),
        ("checkout", None),
        ("sh", "rm -rf 'results/A10-PyTorch-1'"),
        ("sh", "rm -rf 'ci-build'"),
        # no build given (L0_Test by hand): the stage builds its own
        ("sh", build_command(REPOSITORY_BUILD, "ci-build")),
        ("sh", install_command(REPOSITORY_BUILD)),
        (
            "sh",
            ".venv/bin/ci-tool stage run 'A10-PyTorch-1' --output-dir 'results/A10-PyTorch-1' "
            "--html-report 'results/A10-PyTorch-1/report.html' --executor local",
        ),
        ("sh", ".venv/bin/ci-tool history import --if-kept 'results/A10-PyTorch-1' || true"),
        ("junit", "results/A10-PyTorch-1/**/*.xml"),
        ("archiveArtifacts", "results/A10-PyTorch-1/**"),
        ("node", "cpu"),
    ]
    timeouts = [call for call in run["calls"] if call["step"] == "timeout"]
    assert timeouts == [
        {"step": "timeout", "time": 60, "unit": "MINUTES"},
        {"step": "timeout", "time": 30, "unit": "MINUTES"},
    ]


def test_the_real_stage_runner_leaves_exactly_one_junit_file_where_the_pipeline_collects_it(runs: dict) -> None:
    run = runs["test-real-stage-run"]
    assert run["error"] is None
    (executed,) = [call for call in run["calls"] if call["step"] == "executed"]
    assert executed["exitCode"] == 0, executed["stderr"]
    assert executed["script"].endswith(" --detailed-log")
    (junit,) = [call for call in run["calls"] if call["step"] == "junit"]
    workspace = Path(run["workspace"])
    collected = sorted(path.relative_to(workspace) for path in workspace.glob(junit["testResults"]))
    assert collected == [Path("results/CPU-Generic-1/junit.xml")]
    assert "<testcase" in (workspace / collected[0]).read_text()


def test_perf_mode_stages_ask_for_a_perf_agent(runs: dict) -> None:
    # the durations agent (cpu), then the stage's: a pool of its own
    assert steps(runs["test-perf-label"], "node") == [("node", "cpu"), ("node", "h100-pcie-perf")]


def test_the_stages_run_at_the_same_time(runs: dict) -> None:
    run = runs["test-concurrent"]
    assert run["error"] is None  # each stage's run waited for the other's to start
    assert [arg for kind, arg in steps(run, "sh") if " stage run " in str(arg)] == [
        ".venv/bin/ci-tool stage run 'A10-PyTorch-1' --output-dir 'results/A10-PyTorch-1' "
        "--html-report 'results/A10-PyTorch-1/report.html' --executor local",
        ".venv/bin/ci-tool stage run 'CPU-Generic-1' --output-dir 'results/CPU-Generic-1' "
        "--html-report 'results/CPU-Generic-1/report.html' --executor local",
    ]


def test_fail_fast_aborts_the_stages_still_running_and_every_stage_still_archives_its_results(runs: dict) -> None:
    run = runs["test-fail-fast"]
    assert run["error"] == "script returned exit code 1"  # the failed stage's failure, not an abort's
    stages = ["A10-PyTorch-1", "A10-PyTorch-2", "CPU-Generic-1"]
    assert [arg for kind, arg in steps(run, "sh") if " stage run " in str(arg)] == [
        f".venv/bin/ci-tool stage run '{stage}' --output-dir 'results/{stage}' "
        f"--html-report 'results/{stage}/report.html' --executor local"
        for stage in stages
    ]  # all three were running
    assert steps(run, "junit", "archiveArtifacts", "aborted") == [
        *((kind, f"results/{stage}/**{suffix}") for stage in stages for kind, suffix in
          (("junit", "/*.xml"), ("archiveArtifacts", ""))),
        ("aborted", ["A10-PyTorch-1", "CPU-Generic-1"]),
    ]  # fmt: skip


def test_without_fail_fast_every_stage_runs_and_the_build_still_fails(runs: dict) -> None:
    run = runs["test-no-fail-fast"]
    assert run["error"] == "script returned exit code 1"
    assert steps(run, "aborted") == []
    parallel = next(call for call in run["calls"] if call["step"] == "parallel")
    assert parallel["failFast"] is False
    ran = [arg for kind, arg in steps(run, "sh") if " stage run " in str(arg)]
    assert len(ran) == len(parallel["branches"])


def stage_runs(run: dict[str, object]) -> list[str]:
    """The stage names of the `ci-tool stage run` commands, in the branches' order."""
    return [str(arg).split("'")[1] for kind, arg in steps(run, "sh") if " stage run " in str(arg)]


# a stage of a build started without BUILD_JOB builds its own, then installs from it (fetchBuild)
BUILT_HERE = [
    ("sh", "rm -rf 'ci-build'"),
    ("sh", "python3 -m venv --clear .venv && .venv/bin/pip install --quiet uv==0.13.9 && .venv/bin/uv pip install "
           "--quiet --python .venv/bin/python --no-cache . && .venv/bin/ci-tool build --output ci-build"),
    ("sh", "python3 -m venv --clear .venv && PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= .venv/bin/pip install --quiet "
           "--no-compile --no-index --find-links ci-build uv==0.13.9 && UV_NO_CONFIG=1 .venv/bin/uv pip install "
           "--quiet --python .venv/bin/python --offline --no-cache --no-index --find-links ci-build torch==2.13.0 "
           "'ci-tool[engine,test]' "
           "&& .venv/bin/ci-tool build --check --output ci-build"),
]  # fmt: skip
RETRY = {"step": "retry", "count": 3, "conditions": ["agent", "kubernetesAgent", "nonresumable"]}


def test_a_stage_whose_agent_is_lost_runs_again_on_a_fresh_agent_as_attempt_2_and_is_unstable(runs: dict) -> None:
    run = runs["test-agent-lost"]
    assert run["error"] is None
    assert [call for call in run["calls"] if call["step"] == "retry"] == [RETRY, RETRY]
    lost = "hudson.remoting.ChannelClosedException: the agent running A10-PyTorch-1 was lost (agent)"
    a10 = steps(run, "node", "stage", "sh", "junit", "lost", "retrying", "echo", "unstable")
    a10 = a10[a10.index(("node", "a10")) : a10.index(("node", "cpu"), 2)]
    assert a10 == [
        ("node", "a10"),
        ("stage", "A10-PyTorch-1"),
        ("sh", "rm -rf 'results/A10-PyTorch-1'"),
        *BUILT_HERE,
        ("sh", ".venv/bin/ci-tool stage run 'A10-PyTorch-1' --output-dir 'results/A10-PyTorch-1' "
               "--html-report 'results/A10-PyTorch-1/report.html' --executor local"),
        ("lost", None),  # the steps after it find no agent: no import, JUnit or archive of attempt 1
        ("retrying", None),
        ("echo", f"A10-PyTorch-1-attempt-2: A10-PyTorch-1 runs again on a fresh agent; attempt 1 was lost to the "
                 f"infrastructure: {lost}: no agent to run the step on"),
        ("node", "a10"),
        ("stage", "A10-PyTorch-1-attempt-2"),
        ("sh", "rm -rf 'results/A10-PyTorch-1-attempt-2'"),
        *BUILT_HERE,
        ("sh", ".venv/bin/ci-tool stage run 'A10-PyTorch-1-attempt-2' --output-dir 'results/A10-PyTorch-1-attempt-2' "
               "--html-report 'results/A10-PyTorch-1-attempt-2/report.html' --executor local"),
        ("sh", ".venv/bin/ci-tool history import --if-kept 'results/A10-PyTorch-1-attempt-2' || true"),
        ("junit", "results/A10-PyTorch-1-attempt-2/**/*.xml"),
        ("unstable", f"A10-PyTorch-1-attempt-2: passed on a fresh agent after the infrastructure lost attempt 1 "
                     f"({lost}: no agent to run the step on)"),
    ]  # fmt: skip
    assert stage_runs(run) == ["A10-PyTorch-1", "A10-PyTorch-1-attempt-2", "CPU-Generic-1"]


def test_a_test_failure_is_never_retried_and_fails_fast(runs: dict) -> None:
    run = runs["test-fail-fast"]
    assert [call["step"] for call in run["calls"] if call["step"] in ("retrying", "unstable")] == []
    assert "A10-PyTorch-2-attempt-2" not in stage_runs(run)


def test_a_test_failure_on_the_attempt_after_a_lost_agent_fails_fast(runs: dict) -> None:
    run = runs["test-agent-lost-then-tests-fail"]
    assert run["error"] == "script returned exit code 1"
    assert stage_runs(run) == ["A10-PyTorch-1", "A10-PyTorch-1-attempt-2", "CPU-Generic-1"]
    assert [call["message"] for call in run["calls"] if call["step"] == "retrying"] == [
        "FlowInterruptedException: the agent running A10-PyTorch-1 was lost (kubernetesAgent): "
        "no agent to run the step on"
    ]
    assert steps(run, "aborted", "unstable") == [("aborted", ["CPU-Generic-1"])]


def test_a_stage_lost_on_every_attempt_leaves_the_build_unstable_without_failing_fast(runs: dict) -> None:
    run = runs["test-agent-lost-every-attempt"]
    assert run["error"] is None
    assert stage_runs(run) == ["A10-PyTorch-1", "A10-PyTorch-1-attempt-2", "CPU-Generic-1"]
    assert steps(run, "aborted") == []
    assert steps(run, "unstable") == [
        (
            "unstable",
            "A10-PyTorch-1: lost to the infrastructure on all 2 attempts (the last: FlowInterruptedException: the "
            "agent running A10-PyTorch-1-attempt-2 was lost (kubernetesAgent): no agent to run the step on); "
            "its tests did not run",
        )
    ]
    assert ("junit", "results/CPU-Generic-1/**/*.xml") in steps(run, "junit")


def test_the_selections_stage_run_options_reach_every_stage_command(runs: dict) -> None:
    run = runs["test-run-args"]
    assert run["error"] is None
    ran = [arg for kind, arg in steps(run, "sh") if " stage run " in str(arg)]
    assert ran == [
        ".venv/bin/ci-tool stage run 'CPU-Generic-1' --output-dir 'results/CPU-Generic-1' "
        "--html-report 'results/CPU-Generic-1/report.html' --executor local --detailed-log"
    ]


def test_a_slurm_familys_stage_is_submitted_from_a_slurm_agent_with_the_slurm_executor(runs: dict) -> None:
    run = runs["test-slurm"]
    assert run["error"] is None
    assert steps(run, "node", "stage", "timeout")[2:5] == [
        ("node", "slurm"),
        ("stage", "GB200-8_GPUs-2_Nodes-PyTorch-1"),
        ("timeout", 120),
    ]
    assert [arg for kind, arg in steps(run, "sh") if " stage run " in str(arg)] == [
        ".venv/bin/ci-tool stage run 'GB200-8_GPUs-2_Nodes-PyTorch-1' --output-dir "
        "'results/GB200-8_GPUs-2_Nodes-PyTorch-1' --html-report 'results/GB200-8_GPUs-2_Nodes-PyTorch-1/report.html' "
        "--executor slurm"
    ]


def test_an_option_ci_tool_does_not_know_never_reaches_a_shell(runs: dict) -> None:
    run = runs["test-unknown-run-arg"]
    assert run["error"] == (
        "STAGE_RUN_ARGS: expected options of --disable-reuse-test, --record-touches, --detailed-log, found ; rm -rf ~"
    )
    assert steps(run, "node", "sh") == []


def test_an_unknown_stage_fails_before_any_agent_is_allocated(runs: dict) -> None:
    run = runs["test-unknown-stage"]
    assert run["error"] == "STAGES: unknown stage(s) A10-Pytorch-9; the stages are the names in jenkins/stages.yml"
    assert steps(run, "node") == []


def test_stages_must_be_a_json_list(runs: dict) -> None:
    assert runs["test-not-a-list"]["error"] == 'STAGES: expected a JSON list of stage names, found {"a": 1}'


def test_no_stages_is_a_no_op(runs: dict) -> None:
    run = runs["test-nothing"]
    assert (run["error"], steps(run, "echo", "node")) == (None, [("echo", "No stages selected.")])


def test_merge_request_selects_with_ci_tool_then_runs_single_gpu_before_multi_gpu_per_arch(runs: dict) -> None:
    run = runs["mr-passes"]
    assert run["error"] is None
    assert steps(run, "node", "sh")[:3] == [
        ("node", "cpu"),
        ("sh", select_setup_command(REPOSITORY_BUILD)),
        (
            "sh",
            '.venv/bin/ci-tool stage select --request request.json --labels-json "$LABELS" --json --engine jenkins'
            " > selection.json",
        ),
    ]
    assert steps(run, "parallel", "stage", "build")[2:] == [
        ("parallel", ["x86_64", "aarch64"]),
        ("stage", "[Build-x86_64] Build"),
        ("stage", "[Test-x86_64-Single-GPU] Remote Run"),
        ("build", ["A10-PyTorch-1"]),
        ("stage", "[Test-x86_64-Multi-GPU] Remote Run"),
        ("build", [MULTI]),
        ("stage", "[Build-aarch64] Build"),
        ("stage", "[Test-aarch64-Single-GPU] Remote Run"),
        ("build", ["GH200-PyTorch-1"]),
    ]
    builds = [call for call in run["calls"] if call["step"] == "build"]
    assert {
        (call["job"], call["propagate"], call["failFast"], json.dumps(call["stageRunArgs"])) for call in builds
    } == {("L0_Test", False, True, "[]")}


def test_merge_request_declares_the_bots_parameters_and_archives_its_selection(runs: dict) -> None:
    run = runs["mr-passes"]
    (declared,) = [call for call in run["calls"] if call["step"] == "properties"]
    parameters = ["REQUEST", "LABELS", "PR_NUMBER", "HEAD_SHA", "COMMENT_ID", "BASE_REF", "PRIORITY"]
    assert declared["parameters"] == parameters
    assert declared["copyArtifactPermission"] == "L0_Test"  # its stages copy the build from this job's archive
    assert ("archiveArtifacts", "selection.json") in steps(run, "archiveArtifacts")


def test_a_failed_single_gpu_run_keeps_multi_gpu_from_starting_and_aborts_the_other_arch(runs: dict) -> None:
    run = runs["mr-single-fails"]
    assert run["error"] == "x86_64: Single-GPU FAILURE, Multi-GPU NOT_BUILT"
    assert steps(run, "stage", "build", "aborted")[-8:] == [
        ("stage", "[Build-x86_64] Build"),
        ("stage", "[Test-x86_64-Single-GPU] Remote Run"),
        ("build", ["A10-PyTorch-1"]),
        ("stage", "[Test-x86_64-Multi-GPU] Not started"),
        ("stage", "[Build-aarch64] Build"),
        ("stage", "[Test-aarch64-Single-GPU] Remote Run"),
        ("build", ["GH200-PyTorch-1"]),
        ("aborted", ["aarch64"]),
    ]
    assert [call["result"] for call in run["calls"] if call["step"] == "build"] == ["FAILURE", "ABORTED"]


def test_the_architectures_run_at_the_same_time(runs: dict) -> None:
    run = runs["mr-concurrent"]
    assert (run["error"], steps(run, "build")) == (None, [("build", ["A10-PyTorch-1"]), ("build", ["GH200-PyTorch-1"])])


def test_without_fail_fast_multi_gpu_starts_anyway_and_every_build_gets_the_selections_options(runs: dict) -> None:
    run = runs["mr-single-fails-no-fail-fast"]
    assert run["error"] == "x86_64: Single-GPU FAILURE, Multi-GPU SUCCESS"
    builds = [call for call in run["calls"] if call["step"] == "build"]
    assert [(call["stages"], call["failFast"], call["stageRunArgs"]) for call in builds] == [
        (["A10-PyTorch-1"], False, ["--detailed-log"]),
        ([MULTI], False, ["--detailed-log"]),
        (["GH200-PyTorch-1"], False, ["--detailed-log"]),
    ]
    assert steps(run, "aborted") == []


def test_an_unstable_single_gpu_run_lets_multi_gpu_start_and_marks_the_build_unstable(runs: dict) -> None:
    run = runs["mr-unstable"]
    assert run["error"] is None
    assert steps(run, "build", "unstable") == [
        ("build", ["A10-PyTorch-1"]),
        ("build", [MULTI]),
        ("unstable", "x86_64: Single-GPU UNSTABLE, Multi-GPU SUCCESS"),
    ]


def test_multi_gpu_alone_starts_without_a_single_gpu_run(runs: dict) -> None:
    run = runs["mr-only-multi-gpu"]
    assert (run["error"], steps(run, "build")) == (None, [("build", [MULTI])])


def test_blocked_stages_are_named_per_phase_not_run_and_leave_the_build_unstable(runs: dict) -> None:
    run = runs["mr-blocked"]
    assert run["error"] is None
    assert steps(run, "stage", "echo", "build", "unstable")[3:] == [
        ("stage", "[Test-x86_64-Multi-GPU] Blocked"),
        ("echo", f"Waiting for an approval label, not started: {MULTI} (needs the label '{FULL}')"),
        ("stage", "[Build-x86_64] Build"),  # aarch64 runs no stage: it builds nothing
        ("stage", "[Test-x86_64-Single-GPU] Remote Run"),
        ("build", ["A10-PyTorch-1"]),
        ("echo", "L0_Test x86_64 Single-GPU: SUCCESS"),
        ("unstable", "x86_64: 1 stage(s) blocked until the pull request carries an approval label"),
        ("stage", "[Test-aarch64-Multi-GPU] Blocked"),
        ("echo", f"Waiting for an approval label, not started: GB200-4_GPUs-PyTorch-1 (needs the label '{FULL}')"),
        ("unstable", "aarch64: 1 stage(s) blocked until the pull request carries an approval label"),
    ]


def test_a_selected_stage_missing_from_the_table_is_an_error(runs: dict) -> None:
    assert runs["mr-unknown-stage"]["error"] == (
        "ci-tool selected B300-PyTorch-1, which is not in the generated stage table; run `ci-tool generate`"
    )


def test_a_pull_request_build_passes_its_change_to_the_selection_as_base_and_head(runs: dict) -> None:
    """As the GitHub plan job does: the fetched target branch as --base and the commit checked out as --head,
    so ci-tool reads the change from git the one way (change/build.py)."""
    run = runs["mr-pull-request"]
    assert run["error"] is None
    assert steps(run, "sh")[1:3] == [
        ("sh", 'git fetch --no-tags origin -- "${BASE_REF:-$CHANGE_TARGET}"'),
        (
            "sh",
            '.venv/bin/ci-tool stage select --request request.json --labels-json "$LABELS" --json --engine jenkins'
            " --base FETCH_HEAD --head HEAD > selection.json",
        ),
    ]


def executed(run: dict[str, object]) -> dict[str, object]:
    (call,) = [call for call in run["calls"] if call["step"] == "executed"]  # type: ignore[attr-defined]
    return call  # type: ignore[no-any-return]


def test_the_real_selection_of_a_bare_run_feeds_the_pre_merge_stages_to_l0_test(runs: dict) -> None:
    run = runs["mr-real-default"]
    assert (run["error"], executed(run)["exitCode"]) == (None, 0)
    assert steps(run, "build") == [
        ("build", ["CPU-Generic-1", "A10-PyTorch-1", "A10-PyTorch-2", "H100_PCIe-PyTorch-Perf-1"]),
        ("build", ["GH200-PyTorch-1"]),
    ]


def test_the_real_selection_of_a_labelled_stage_list_reaches_the_right_phase_and_arch(runs: dict) -> None:
    run = runs["mr-real-stage-list"]
    assert run["error"] is None
    assert steps(run, "stage", "build")[2:] == [
        ("stage", "[Build-x86_64] Build"),
        ("stage", "[Test-x86_64-Single-GPU] Remote Run"),
        ("build", ["A10-PyTorch-2"]),
        ("stage", "[Build-aarch64] Build"),
        ("stage", "[Test-aarch64-Multi-GPU] Remote Run"),
        ("build", ["GB200-4_GPUs-PyTorch-1"]),
    ]


def test_the_real_selection_blocks_a_multi_gpu_stage_the_labels_do_not_approve(runs: dict) -> None:
    run = runs["mr-real-unlabelled-multi-gpu"]
    assert run["error"] is None
    assert steps(run, "build") == [("build", ["A10-PyTorch-2"])]
    assert ("stage", "[Test-aarch64-Multi-GPU] Blocked") in steps(run, "stage")


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("mr-real-unknown-stage", "--stage-list: expected a stage of the catalog, found 'A10-PyTorch-9'"),
        ("mr-real-not-run", "expected a /bot run request to select stages, found /bot kill"),
        ("mr-real-reuse-build", "--reuse-test: expected an option the jenkins engine honours, found one it cannot"),
    ],
    ids=["unknown stage", "not a run request", "flag Jenkins cannot honour"],
)
def test_a_request_ci_tool_refuses_stops_at_the_selection(runs: dict, scenario: str, message: str) -> None:
    run = runs[scenario]
    assert run["error"] == "script returned exit code 1"
    assert message in executed(run)["stderr"]  # type: ignore[operator]
    assert steps(run, "build") == []


def test_merge_request_with_nothing_selected_is_a_no_op(runs: dict) -> None:
    run = runs["mr-nothing"]
    assert (run["error"], steps(run, "build", "echo")[-1]) == (None, ("echo", "No stages selected."))



def build_parameters(run: dict[str, object]) -> list[dict[str, object]]:
    return [call["parameters"] for call in run["calls"] if call["step"] == "build"]  # type: ignore[attr-defined]


def test_a_bot_build_checks_out_the_pull_requests_head_and_selects_from_its_change_since_the_base(
    runs: dict, pull_request: PullRequestOrigin
) -> None:
    run = runs["mr-git-head"]
    assert run["error"] is None
    workspace = Path(run["workspace"])
    assert git(workspace, "rev-parse", "HEAD") == pull_request.head  # the PR's head, not main
    record = json.loads((workspace / "selection.json").read_text())
    assert (record["head"], record["base"]) == (pull_request.head, pull_request.base)
    assert record["stages"] == ["CPU-Generic-1"]  # the docs file group: a docs-only change runs the CPU stages
    assert ("archiveArtifacts", "selection.json") in steps(run, "archiveArtifacts")
    (handed,) = build_parameters(run)
    assert (handed["HEAD_SHA"], handed["BASE_SHA"], handed["PRIORITY"]) == (pull_request.head, pull_request.base, "3")


def test_a_bot_build_for_a_commit_the_pull_request_moved_past_is_refused_before_anything_runs(
    runs: dict, pull_request: PullRequestOrigin
) -> None:
    run = runs["mr-git-moved-on"]
    assert run["error"] == (
        f"HEAD_SHA {pull_request.old_head} is not the head of pull request #7 anymore (its head is "
        f"{pull_request.head}): not testing an old commit; comment `/bot run` to test the head"
    )
    assert (steps(run, "build"), git(Path(run["workspace"]), "rev-parse", "HEAD")) == ([], pull_request.base)


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("mr-git-bad-base", "BASE_REF: expected a branch name, found --upload-pack=touch /tmp/x"),
        ("test-bad-commit", "HEAD_SHA, BASE_SHA: expected 40-digit hexadecimal commit ids, found --upload-pack=touch "
                            "/tmp/x"),
    ],
    ids=["merge request: base", "test job: head"],
)  # fmt: skip
def test_a_commit_or_branch_that_is_not_one_never_reaches_git(runs: dict, scenario: str, message: str) -> None:
    run = runs[scenario]
    assert run["error"] == message
    assert not [arg for kind, arg in steps(run, "sh") if "upload-pack" in str(arg)]


def test_each_stage_tests_the_handed_over_commit_with_the_target_branchs_waives_merged_in(
    runs: dict, pull_request: PullRequestOrigin
) -> None:
    run = runs["test-git-head"]
    assert run["error"] is None
    workspace = Path(run["workspace"])
    assert git(workspace, "rev-parse", "HEAD") == pull_request.head
    stage_run = next(call for call in run["calls"] if call["step"] == "executed" and " stage run " in call["script"])
    assert stage_run["script"].endswith(' --executor local --base "$BASE_SHA"')
    assert stage_run["stdout"].startswith(
        f"merged waives: 1 line(s) added from {pull_request.base}, 0 left out that this change removes\n"
    )
    assert "(1 passed, 0 failed, 1 skipped)" in stage_run["stdout"]  # test_b, waived on main only
    assert WAIVED_ON_MAIN in "".join(path.read_text() for path in (workspace / "results").glob("*/waives-merged-*"))


def test_high_priority_queues_every_test_build_at_the_high_priority(runs: dict) -> None:
    run = runs["mr-real-high-priority"]
    assert (run["error"], executed(run)["exitCode"]) == (None, 0)
    assert [parameters["PRIORITY"] for parameters in build_parameters(run)] == ["1", "1"]


def test_debug_hands_the_hold_to_l0_test_whose_failed_stage_keeps_its_agent(runs: dict) -> None:
    assert [parameters["DEBUG_HOLD_MINUTES"] for parameters in build_parameters(runs["mr-debug"])] == ["30"]
    run = runs["test-debug-hold"]
    assert run["error"] == "script returned exit code 1"
    assert steps(run, "echo", "sleep")[:1] == [
        ("echo", "--debug: A10-PyTorch-1 failed; keeping agent a10-7 and its workspace /agent/L0_Test for 30 minutes")
    ]
    sleeps = [call for call in run["calls"] if call["step"] == "sleep"]
    assert sleeps == [{"step": "sleep", "time": 30, "unit": "MINUTES"}]  # the failed stage only
