"""What the bot announces is what CI selects: one real git pull request per kind of change, and the bot's
reply to `/bot run` (`bot handle` against the GitHub and Jenkins fakes, from a checkout of the base branch as
the bot workflow runs it), the generated Jenkins pipeline's selection commands (as L0_MergeRequest.groovy
runs them in a pull request build), the generated GitHub workflow's plan job, and a local
`ci-tool run --base --plan-only` (from the pull request's checkout) all name the same stages: a family whose
list the change narrows runs as `<family>-<K>-cbts` stages everywhere (the pipelines' stage jobs run the
narrowing their plan's run record holds)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tool.change.git_read import merged_waives
from ci_tool.cli import main
from ci_tool.history.records import RunRecord, StageRecord
from ci_tool.history.store import HistoryStore
from ci_tool.layout import CATALOG_PATH, TEST_DB_DIR, waives_file_of
from ci_tool.outcomes import RunState, StageState
from ci_tool.run.stage_inputs import catalog_inputs
from ci_tool.stages.catalog_load import open_catalog
from tests.helpers.bot_handle import ALLOWLIST, PR, REPOSITORY, MakeEvent
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins, Script
from tests.helpers.generate import run_plan_job
from tests.helpers.git_pulls import (
    A10_WAIVE,
    MULTI_GPU_PATH,
    MULTI_GPU_STAGE,
    commit_all,
    git,
    make_repository,
    serve_pull,
)

_STAGE_ROW = re.compile(r"^\| `([^`]+)` \| `[^`]+` \| \d+/\d+ \|")
ALL_PRE_MERGE = ["CPU-Generic-1", "CPU-Generic-2", "CPU-Generic-3", "A10-PyTorch-1", "A10-PyTorch-2",
                 "DGX_H100-PyTorch-1", "CPU-Build_Docs"]  # fmt: skip
ALL_STAGES = [*ALL_PRE_MERGE[:5], "A10-PyTorch-Post-Merge-1", *ALL_PRE_MERGE[5:]]  # the catalog's order


def _edit(path: str, old: str, new: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        text = (root / path).read_text() if (root / path).exists() else ""
        assert old in text, f"{path} lacks {old!r}"
        (root / path).write_text(text.replace(old, new, 1) if old else text + new)

    return change


# id -> (the pull request's change, the stages the bot, the pipelines and a local run run)
CHANGES: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "unwaive": (_edit("test-db/waives.txt", A10_WAIVE, ""), ["A10-PyTorch-1-cbts"]),
    "new waive": (_edit("test-db/waives.txt", "", "tests/engine/test_attention.py SKIP (https://bugs.example/3)\n"),
                  []),
    "test-db entry added": (_edit("test-db/l0_cpu.yml", "", "  - tests/tools/test_new.py\n"), ["CPU-Generic-1-cbts"]),
    "test file changed": (_edit("tests/tools/test_cli.py", "pass", "assert True"), ["CPU-Generic-1-cbts"]),
    "test file renamed": (lambda root: git(root, "mv", "tests/unit/test_a.py", "tests/unit/test_c.py"),
                          ["CPU-Generic-1-cbts"]),
    "docs only": (_edit("docs/guide.md", "# Guide", "# The guide"), ["CPU-Build_Docs"]),
    "source file": (_edit("src/pool.py", "return 1", "return 2"), ALL_PRE_MERGE),
}  # fmt: skip


def selected(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("+ ")]


def catalog_order(name: str) -> int:
    """Where a stage, or the stage a `-cbts` one narrows, stands in the catalog."""
    return ALL_STAGES.index(name.removesuffix("-cbts"))


_GROOVY_STRING = re.compile(r"^@Field final String (\w+) = '(.*)'$", re.MULTILINE)


def jenkins_selection(root: Path) -> list[str]:
    """The stages L0_MergeRequest selects in a pull request build (CHANGE_TARGET set): its own commands,
    read from the generated pipeline, run in the checkout as its `Select Stages` stage runs them."""
    fields = dict(_GROOVY_STRING.findall((root / "jenkins" / "L0_MergeRequest.groovy").read_text()))
    script = (f"{fields['FETCH_TARGET_COMMAND']}\n{fields['SELECT_COMMAND']} {fields['CHANGE_OPTION']}"
              f" > {fields['SELECTION_FILE']}")  # fmt: skip
    environment = {**os.environ, "CHANGE_TARGET": "main", "LABELS": "[]"}
    done = subprocess.run(["bash", "-e", "-c", script], cwd=root, env=environment, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return list(json.loads((root / fields["SELECTION_FILE"]).read_text())["stages"])


def github_selection(root: Path, secrets: dict[str, str] | None = None) -> list[str]:
    """The stages the generated workflow's plan job puts into its matrices for a pull request into main."""
    workflow = (root / ".github" / "workflows" / "l0-test.yml").read_text()
    plan = run_plan_job(workflow, root, secrets=secrets, base_ref="main")
    assert plan.code == 0, plan.log
    rows = [row for key, value in plan.outputs.items() if key.endswith(tuple("0123456789")) for row in
            json.loads(value)]  # fmt: skip
    return sorted((str(row["stage"]) for row in rows), key=catalog_order)


def stage_run_inputs(root: Path, stage: str, *, base: str) -> str:
    """The digest of a stage's inputs as `ci-tool stage run STAGE --base BASE` in the checkout `root` records it
    (run/stage_inputs.py: reuse matches it)."""
    test_db = root / TEST_DB_DIR
    merged = root.parent / "merged-waives.txt"
    merged.write_text(merged_waives(waives_file_of(test_db), base=base, root=root).text)
    loaded = open_catalog(root / CATALOG_PATH, test_db, None)
    return catalog_inputs(loaded, str(merged))(stage)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    return captured.out


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_the_bot_the_pipelines_and_a_local_run_select_the_same_stages_for_one_pull_request(
    change: tuple[Callable[[Path], None], list[str]],
    env: pytest.MonkeyPatch,
    event: MakeEvent,
    github: FakeGitHub,
    jenkins: FakeJenkins,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    edit, stages = change
    root = make_repository(tmp_path / "repo")
    git(root, "checkout", "-q", "-b", "pr")
    edit(root)
    commit_all(root, "the pull request")
    serve_pull(github, REPOSITORY, PR, root, base="main", head="pr")
    git(root, "worktree", "add", "-q", str(tmp_path / "default-branch"), "main")

    env.chdir(tmp_path / "default-branch")  # the bot workflow checks out the default branch, never the PR
    cli(capsys, "bot", "handle", "--event", str(event("/bot run")), "--allowlist", ALLOWLIST,
        "--poll-seconds", "0", "--retry-seconds", "0")  # fmt: skip
    (reply,) = github.bodies()
    bot = [found.group(1) for line in reply.splitlines() if (found := _STAGE_ROW.match(line))]
    head = git(root, "rev-parse", "pr").strip()
    fork = git(root, "rev-parse", "main").strip()
    assert f"**Preview** from the pull request's change {fork[:12]}..{head[:12]} read from GitHub: " in reply

    env.chdir(root)  # CI checks out the pull request's head
    # First by hand, in the clean checkout (without --head, files the pipelines leave behind are changes).
    select = ("stage", "select", "--request", "request.json", "--base", "main")
    by_hand = {engine: selected(cli(capsys, *select, "--engine", engine)) for engine in ("jenkins", "github")}
    local = selected(cli(capsys, "run", "--base", "main", "--plan-only"))
    on_jenkins = jenkins_selection(root)
    on_github = github_selection(root)

    assert (bot, on_jenkins, on_github) == (stages, stages, stages)
    assert by_hand == {"jenkins": stages, "github": stages}
    assert local == stages


def test_a_bare_run_on_a_multi_gpu_path_runs_the_other_stages_everywhere_and_blocks_the_multi_gpu_one(
    env: pytest.MonkeyPatch,
    event: MakeEvent,
    github: FakeGitHub,
    jenkins: FakeJenkins,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """A pull request that touches a multi-GPU path, without the multi-GPU label: the bot starts the run, as
    `bot plan` and both pipelines plan it: the single-GPU stages run, the multi-GPU one is blocked and the
    reply names the label that unblocks it."""
    root = make_repository(tmp_path / "repo", multi_gpu=True)
    git(root, "checkout", "-q", "-b", "pr")
    _edit(MULTI_GPU_PATH, "", "def probe():\n    return 0\n")(root)
    commit_all(root, "the pull request")
    serve_pull(github, REPOSITORY, PR, root, base="main", head="pr")
    git(root, "worktree", "add", "-q", str(tmp_path / "default-branch"), "main")
    env.chdir(tmp_path / "default-branch")
    handled = cli(capsys, "bot", "handle", "--event", str(event("/bot run")), "--allowlist", ALLOWLIST,
                  "--poll-seconds", "0", "--retry-seconds", "0")  # fmt: skip
    assert handled.splitlines()[0] == "decision: dispatch: /bot run by 'maintainer-amy' (author association MEMBER)"
    assert len(jenkins.triggered()) == 1
    (reply,) = github.bodies()
    rows = [line for line in reply.splitlines() if _STAGE_ROW.match(line)]
    bot = [row.split("`")[1] for row in rows if "**blocked**" not in row]
    assert [row.split("`")[1] for row in rows if "**blocked** until `ci: full pre-merge approved`" in row] == [
        MULTI_GPU_STAGE
    ]
    assert f"Needs the label `ci: full pre-merge approved`, for `multi-GPU stages {MULTI_GPU_STAGE}`." in reply
    env.chdir(root)
    plan = json.loads(cli(capsys, "bot", "plan", "/bot run", "--base", "main", "--json"))
    assert plan["blocked"] == [{"stage": MULTI_GPU_STAGE, "label": "ci: full pre-merge approved"}]
    planned = [stage["name"] for stage in plan["stages"]]
    assert (bot, planned, jenkins_selection(root), github_selection(root)) == (
        ALL_PRE_MERGE, ALL_PRE_MERGE, ALL_PRE_MERGE, ALL_PRE_MERGE)  # fmt: skip


def test_a_pull_request_that_breaks_a_list_gets_a_full_set_preview_and_the_error(
    env: pytest.MonkeyPatch,
    event: MakeEvent,
    github: FakeGitHub,
    jenkins: FakeJenkins,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The bot plans from the lists as this checkout has them when the head's do not load: the test-db rule
    cannot decide, so the preview is the full set; the build's own selection then stops on the error."""
    root = make_repository(tmp_path / "repo")
    git(root, "checkout", "-q", "-b", "pr")
    _edit("test-db/l0_cpu.yml", "", "  - {not: a test line}\n")(root)
    commit_all(root, "the pull request")
    serve_pull(github, REPOSITORY, PR, root, base="main", head="pr")
    git(root, "worktree", "add", "-q", str(tmp_path / "default-branch"), "main")
    env.chdir(tmp_path / "default-branch")
    cli(capsys, "bot", "handle", "--event", str(event("/bot run")), "--allowlist", ALLOWLIST,
        "--poll-seconds", "0", "--retry-seconds", "0")  # fmt: skip
    (reply,) = github.bodies()
    assert [found.group(1) for line in reply.splitlines() if (found := _STAGE_ROW.match(line))] == ALL_PRE_MERGE
    assert "- `test-db/l0_cpu.yml: test-db rule: cannot decide (" in reply
    env.chdir(root)
    assert main(["stage", "select", "--request", "request.json", "--base", "main", "--head", "HEAD"]) == 1


def test_reuse_pipeline_carries_a_build_that_ran_what_the_change_selects(
    env: pytest.MonkeyPatch,
    event: MakeEvent,
    github: FakeGitHub,
    jenkins: FakeJenkins,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """/bot reuse-pipeline compares a passing build's archived selection with what its request selects now:
    for an unwaive both are the narrowed A10 stage, as the bot reads the change from GitHub like the build did."""
    root = make_repository(tmp_path / "repo")
    git(root, "checkout", "-q", "-b", "pr")
    CHANGES["unwaive"][0](root)
    commit_all(root, "the pull request")
    pull = serve_pull(github, REPOSITORY, PR, root, base="main", head="pr")
    env.chdir(root)
    archived = {"stages": jenkins_selection(root)}
    passed = jenkins.add_build("L0_MergeRequest", {"REQUEST": '{"command": "run", "flags": {}}', "PR_NUMBER": str(PR),
                                                   "HEAD_SHA": pull.head_sha}, Script(selection=archived),
                               building=False, result="SUCCESS")  # fmt: skip
    github.statuses.append({"sha": pull.head_sha, "context": "Jenkins Full Build", "state": "success",
                            "description": "2 passed, 0 failed, 0 skipped", "target_url": passed.url})  # fmt: skip
    git(root, "worktree", "add", "-q", str(tmp_path / "default-branch"), "main")
    env.chdir(tmp_path / "default-branch")
    cli(capsys, "bot", "handle", "--event", str(event("/bot reuse-pipeline")), "--allowlist", ALLOWLIST,
        "--poll-seconds", "0", "--retry-seconds", "0")  # fmt: skip
    assert archived == {"stages": ["A10-PyTorch-1-cbts"]}
    assert github.bodies()[0].endswith(f"\n\nCarried `Jenkins Full Build` from build [#1]({passed.url}).\n")


def test_with_a_shared_history_the_bot_and_both_pipelines_reuse_the_stage_that_passed_on_the_head(
    env: pytest.MonkeyPatch,
    event: MakeEvent,
    github: FakeGitHub,
    jenkins: FakeJenkins,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """One history every runner shares, in which an agent passed CPU-Generic-2 on the pull request's head:
    the preview names it reused, and neither pipeline selects it (a source change: the full set)."""
    root = make_repository(tmp_path / "repo")
    git(root, "checkout", "-q", "-b", "pr")
    CHANGES["source file"][0](root)
    commit_all(root, "the pull request")
    head = git(root, "rev-parse", "pr").strip()
    shared = tmp_path / "shared.sqlite"
    with HistoryStore(shared) as store:  # what the agent of an earlier build recorded: its stage run on the head
        store.start_run(RunRecord("earlier", "ci-tool stage run CPU-Generic-2", RunState.RUNNING, 1.0,
                                  code_commit=head, scope="stage CPU-Generic-2"))  # fmt: skip
        passed = StageRecord("earlier", "CPU-Generic-2", StageState.PASSED, started_at=1.0,
                             inputs=stage_run_inputs(root, "CPU-Generic-2", base="main"))  # fmt: skip
        store.record_stage(passed, recorded_at=2.0)
        store.finish_run("earlier", state=RunState.PASSED, finished_at=2.0)
    env.setenv("CI_TOOL_HISTORY", str(shared))
    serve_pull(github, REPOSITORY, PR, root, base="main", head="pr")
    git(root, "worktree", "add", "-q", str(tmp_path / "default-branch"), "main")
    env.chdir(tmp_path / "default-branch")
    cli(capsys, "bot", "handle", "--event", str(event("/bot run")), "--allowlist", ALLOWLIST,
        "--poll-seconds", "0", "--retry-seconds", "0")  # fmt: skip
    (reply,) = github.bodies()
    bot = [found.group(1) for line in reply.splitlines() if (found := _STAGE_ROW.match(line))]
    assert "| `CPU-Generic-2` | step 18: `reused from run earlier` |" in reply
    env.chdir(root)
    expected = [stage for stage in ALL_PRE_MERGE if stage != "CPU-Generic-2"]
    assert (bot, jenkins_selection(root), github_selection(root, {"CI_TOOL_HISTORY": str(shared)})) == (
        expected,
        expected,
        expected,
    )


def test_with_touch_records_the_bot_and_both_pipelines_narrow_a_source_change_alike(
    env: pytest.MonkeyPatch,
    event: MakeEvent,
    github: FakeGitHub,
    jenkins: FakeJenkins,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """A post-merge run on `main` recorded which test ran src/pool.py's `alloc` on the CPU stages into the
    shared history; a pull request that changes `alloc` then narrows the same way in the bot's preview (the
    change read from GitHub, the records judged in the bot's clone) as in both pipelines: CPU-Generic's three
    shards become one `-cbts` shard of the one test that ran `alloc`, the docs stage drops out, and so do the
    GPU stages (no records of their GPU types): none of their tests can load src/pool.py."""
    pytest.importorskip("coverage")  # the `test` extra installs it; touch recording needs it
    root = make_repository(tmp_path / "repo")
    (root / "tests" / "unit" / "test_pool.py").write_text("from src.pool import alloc\n\n\ndef test_alloc():\n"
                                                           "    assert alloc() == 1\n")  # fmt: skip
    (root / "tests" / "slow").mkdir()
    for name in ("test_big.py", "test_huge.py"):  # the lists' other entries, so the recording run passes
        (root / "tests" / "slow" / name).write_text("def test_slow():\n    pass\n")
    commit_all(root, "a test of the pool")
    shared = tmp_path / "shared.sqlite"
    env.setenv("CI_TOOL_HISTORY", str(shared))
    env.chdir(root)
    shards = '/bot run --stage-list "CPU-Generic-1,CPU-Generic-2,CPU-Generic-3"'
    cli(capsys, "run", shards, "--record-touches")
    git(root, "checkout", "-q", "-b", "pr")
    _edit("src/pool.py", "return 1", "return 1  # the same, said again")(root)
    commit_all(root, "the pull request")
    serve_pull(github, REPOSITORY, PR, root, base="main", head="pr")
    git(root, "worktree", "add", "-q", str(tmp_path / "default-branch"), "main")
    env.chdir(tmp_path / "default-branch")
    cli(capsys, "bot", "handle", "--event", str(event("/bot run")), "--allowlist", ALLOWLIST,
        "--poll-seconds", "0", "--retry-seconds", "0")  # fmt: skip
    (reply,) = github.bodies()
    bot = [found.group(1) for line in reply.splitlines() if (found := _STAGE_ROW.match(line))]
    recorded_at = git(root, "rev-parse", "main").strip()[:12]
    assert f"src/pool.py:alloc: touched rule: runs the 1 test(s) that ran it on CPU records from {recorded_at}" in reply
    assert "src/pool.py:alloc: touched rule: no A10 records: runs the 1 test path(s) that can load it" in reply
    env.chdir(root)
    expected = ["CPU-Generic-1-cbts"]
    assert (bot, jenkins_selection(root), github_selection(root, {"CI_TOOL_HISTORY": str(shared)})) == (
        expected,
        expected,
        expected,
    )
    # The stage job, given the build's run record as L0_Test and the GitHub stage job give it: the one test.
    results = tmp_path / "results"
    cli(capsys, "stage", "run", "CPU-Generic-1-cbts", "--selection", "selection.json", "--output-dir", str(results))
    assert re.findall(r'<testcase classname="([^"]+)" name="([^"]+)"', (results / "junit.xml").read_text()) == [
        ("CPU-Generic-1-cbts.tests.unit.test_pool", "test_alloc")
    ]
