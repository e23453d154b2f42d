"""The DSL stub the Jenkins pipeline tests run on (pipeline_stub.groovy): it models exactly the steps and
global variables the generated pipelines use, read from their syntax trees, so a step a template gains fails
here until the stub models it; a step, argument or global it does not model fails the stub's run with the
script's file and line, even inside `catch (Exception)` or a `parallel` branch; and its `parallel` has
Jenkins' results and failures, fail-fast killing a real `sh` that still runs. Every scenario here runs in one
JVM."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.generate import Generated, StubProcess

ROOT = Path(__file__).resolve().parents[3]
JENKINS_FILES = ("jenkins/L0_Test.groovy", "jenkins/L0_MergeRequest.groovy")

# Hand-written pipelines for the stub's own behaviour: id -> Groovy source.
PIPELINES: dict[str, str] = {
    "unmodelled step": "node('cpu') {\n    cleanWs()\n}\n",
    "unmodelled global": "echo 'build'\necho \"${currentBuild.result}\"\n",
    "unmodelled argument": "junit(testResults: 'results/*.xml', skipPublishingChecks: true)\n",
    "named arguments to a positional step": "node(label: 'cpu') {\n    echo 'in'\n}\n",
    "swallowed by catch Exception": "try {\n    cleanWs()\n} catch (Exception problem) {\n    echo 'carried on'\n}\n",
    "in a parallel branch": "parallel(a: { echo 'a' }, b: {\n    deleteDir()\n})\n",
    "branch results": "Map results = parallel(a: { 'A' }, b: { 'B' })\necho \"${results}\"\n",
    "a branch fails": "parallel(a: { error('a broke') }, b: { echo 'b ran to its end' })\necho 'not reached'\n",
    # b fails once a's real `sh` is running (a FIFO hands over): fail-fast kills a's shell and its `sleep`
    "fail fast kills a real sh": (
        "parallel(failFast: true,\n"
        "    a: { sh 'echo $$ > shell.pid; sleep 60 & echo $! > sleep.pid; "
        "echo started > ready.fifo; wait; echo never' },\n"
        "    b: {\n"
        "        sh 'read line < ready.fifo'\n"
        "        error('b broke')\n"
        "    })\n"
    ),
    "uses": (
        "void helper(Closure body) {\n    body()\n}\n"
        "String local = 'x'\n"
        "helper {\n    sh local\n}\n"
        "Closure later = { echo params.NAME }\n"
        "later()\n"
        "sleep(time: 1, unit: 'MINUTES')\n"
        "cleanWs(deleteDirs: true, notFailBuild: true)\n"
    ),
}
HINT = "model it in steps() of tests/ci_tool/generate/pipeline_stub.groovy, as Jenkins runs it"
UNMODELLED = {  # the stub's message for each pipeline that uses what it does not model
    "unmodelled step": "unmodelled_step.groovy:2: expected a step or global variable the stub models, found 'cleanWs'",
    "unmodelled global": (
        "unmodelled_global.groovy:2: expected a step or global variable the stub models, found 'currentBuild'"
    ),
    "unmodelled argument": (
        "unmodelled_argument.groovy:1: junit: expected the named arguments the stub models (testResults, "
        "allowEmptyResults, keepProperties), found skipPublishingChecks"
    ),
    "named arguments to a positional step": (
        "named_arguments_to_a_positional_step.groovy:1: node: expected the named arguments the stub models (), "
        "found label"
    ),
    "swallowed by catch Exception": (
        "swallowed_by_catch_Exception.groovy:2: expected a step or global variable the stub models, found 'cleanWs'"
    ),
    "in a parallel branch": (
        "in_a_parallel_branch.groovy:2: expected a step or global variable the stub models, found 'deleteDir'"
    ),
}


StubResult = tuple[subprocess.CompletedProcess[str], dict[str, Any]]  # the process, and each scenario's result


def _file_name(pipeline: str) -> str:
    return pipeline.replace(" ", "_") + ".groovy"


@pytest.fixture(scope="module")
def stub(
    generated: dict[str, Generated], stub_process: StubProcess, tmp_path_factory: pytest.TempPathFactory
) -> StubResult:
    """One stub run: the modelled steps, the steps of every generated Groovy file (every golden catalog's and
    the repository's), and each hand-written pipeline, run (the `uses` one read)."""
    folder = tmp_path_factory.mktemp("pipelines")
    scenarios: dict[str, dict[str, object]] = {"modelled": {"modelled": True}}
    for catalog, result in sorted(generated.items()):
        for target in JENKINS_FILES:
            scenarios[f"{catalog}:{target}"] = {"uses": str(result.path(target))}
    for target in JENKINS_FILES:
        if (ROOT / target).exists():
            scenarios[f"repo:{target}"] = {"uses": str(ROOT / target)}
    for name, source in PIPELINES.items():
        (folder / _file_name(name)).write_text(source, encoding="utf-8")
        path = str(folder / _file_name(name))
        scenarios[name] = {"uses": path} if name == "uses" else {"script": path, "params": {"NAME": "n"}}
    workspace = tmp_path_factory.mktemp("fail-fast-workspace")
    os.mkfifo(workspace / "ready.fifo")
    scenarios["fail fast kills a real sh"] |= {"workspace": str(workspace), "execute": ["fifo"]}
    process = stub_process(list(scenarios.values()))
    assert process.stdout, process.stderr
    results = {
        name: {**result, "workspace": scenario.get("workspace")}
        for (name, scenario), result in zip(scenarios.items(), json.loads(process.stdout), strict=True)
    }
    return process, results


def test_the_stub_models_exactly_the_steps_and_globals_the_generated_pipelines_use(stub: StubResult) -> None:
    _, results = stub
    modelled: dict[str, dict[str, Any]] = results["modelled"]["modelled"]
    used: dict[str, set[str]] = {}
    where: dict[str, str] = {}
    for name, result in results.items():
        if ".groovy" in name and ":" in name:  # a generated or the repository's file
            for step, use in result["uses"].items():
                used.setdefault(step, set()).update(use["named"])
                where.setdefault(step, use["at"])
    unmodelled = sorted(f"{step} ({where[step]})" for step in set(used) - set(modelled))
    assert not unmodelled, f"the generated Groovy calls what pipeline_stub.groovy does not model: {unmodelled}"
    assert sorted(modelled) == sorted(used), "pipeline_stub.groovy models what no generated Groovy calls"
    assert [step for step, spec in modelled.items() if not spec["plugin"]] == [], "steps the stub names no plugin for"
    named = {  # None: a global variable, or parallel's branch names
        step: (sorted(used[step]), sorted(spec["named"]))
        for step, spec in modelled.items()
        if spec["named"] is not None and used[step] != set(spec["named"])
    }
    assert named == {}, "step: (the named arguments the generated Groovy passes, those the stub models)"


def test_the_steps_a_script_uses_are_read_from_its_syntax_tree(stub: StubResult) -> None:
    _, results = stub
    # its own method, its local variable and its closure variable are not steps; a step inside a closure is
    assert results["uses"]["uses"] == {
        "cleanWs": {"named": ["deleteDirs", "notFailBuild"], "at": "uses.groovy:11"},
        "echo": {"named": [], "at": "uses.groovy:8"},
        "params": {"named": [], "at": "uses.groovy:8"},
        "sh": {"named": [], "at": "uses.groovy:6"},
        "sleep": {"named": ["time", "unit"], "at": "uses.groovy:10"},
    }


def test_what_the_stub_does_not_model_fails_its_run_naming_the_line(stub: StubResult) -> None:
    process, results = stub
    assert process.returncode == 1
    messages = {name: f"{message} Hint: {HINT}" for name, message in UNMODELLED.items()}
    assert process.stderr.splitlines() == [f"pipeline_stub.groovy: {message}" for message in messages.values()]
    found = {name: (results[name]["unmodelled"], results[name]["error"]) for name in messages}
    assert found == {name: (message, None) for name, message in messages.items()}
    # the catch (Exception) did not take it for a step's failure
    assert "carried on" not in str(results["swallowed by catch Exception"]["calls"])


def test_parallel_returns_every_branchs_result_by_name(stub: StubResult) -> None:
    _, results = stub
    run = results["branch results"]
    assert (run["error"], run["calls"][-1]) == (None, {"step": "echo", "message": "[a:A, b:B]"})


def test_without_fail_fast_a_failed_branch_fails_the_parallel_once_the_others_have_ended(stub: StubResult) -> None:
    _, results = stub
    run = results["a branch fails"]
    assert run["error"] == "a broke"
    assert run["calls"] == [
        {"step": "parallel", "branches": ["a", "b"], "failFast": False},
        {"step": "error", "message": "a broke"},
        {"step": "echo", "message": "b ran to its end"},
    ]


def test_fail_fast_kills_a_running_real_sh_and_every_process_it_started(stub: StubResult) -> None:
    _, results = stub
    run = results["fail fast kills a real sh"]
    assert run["error"] == "b broke"
    assert [(call["step"], call.get("exitCode", call.get("branches"))) for call in run["calls"]] == [
        ("parallel", ["a", "b"]),
        ("sh", None),  # a's, killed: nothing executed is recorded for it
        ("sh", None),
        ("executed", 0),
        ("error", None),
        ("aborted", ["a"]),
    ]
    workspace = Path(run["workspace"])
    alive = [started for started in ("shell.pid", "sleep.pid") if _alive(int((workspace / started).read_text()))]
    assert alive == []


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, killed but not yet reaped by whoever adopted it, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status
