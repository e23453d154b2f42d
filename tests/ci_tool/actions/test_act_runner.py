"""The act harness on a small real workflow (no installs, seconds): each job's result and log, a matrix from
a job's output, `if:` skips, a secret, and an artifact that one job uploads and another downloads through
act's artifact server with the pinned actions from the shared folder."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ci_tool.generate.context import DOWNLOAD_ARTIFACT_ACTION, UPLOAD_ARTIFACT_ACTION
from tests.ci_tool.actions.act_runner import ActRunner, JobResult, parse_log, pinned_actions, working_tree_repo

UPLOAD = UPLOAD_ARTIFACT_ACTION.split(" #")[0]
DOWNLOAD = DOWNLOAD_ARTIFACT_ACTION.split(" #")[0]
WORKFLOW = f"""\
name: Small
on:
  workflow_dispatch:
    inputs:
      stages:
        type: string
        default: '[]'
permissions:
  contents: read
jobs:
  plan:
    runs-on: ubuntu-latest
    outputs:
      matrix: ${{{{ steps.plan.outputs.matrix }}}}
    steps:
      - id: plan
        env:
          STAGES: ${{{{ inputs.stages }}}}
        run: echo "matrix=$STAGES" >> "$GITHUB_OUTPUT"
      - run: mkdir out && echo planned > out/note.txt
      - uses: {UPLOAD}
        with:
          name: note
          path: out/note.txt
  stage:
    name: ${{{{ matrix.stage }}}}
    needs: [plan]
    if: ${{{{ needs.plan.outputs.matrix != '[]' }}}}
    runs-on: ${{{{ matrix.runs_on }}}}
    strategy:
      fail-fast: false
      max-parallel: 1  # one entry after the other, in order: act reports the first one's failure for both
      matrix:
        include: ${{{{ fromJSON(needs.plan.outputs.matrix) }}}}
    steps:
      - uses: {DOWNLOAD}
        with:
          name: note
          path: got
      - env:
          STAGE: ${{{{ matrix.stage }}}}
          TOKEN: ${{{{ secrets.TOKEN }}}}
        run: |
          echo "stage $STAGE read $(cat got/note.txt), token of ${{#TOKEN}} characters: $TOKEN"
          test "$STAGE" != bad
  never:
    needs: [plan]
    if: ${{{{ false }}}}
    runs-on: ubuntu-latest
    steps:
      - run: echo never
"""
COMMENT_WORKFLOW = """\
name: Comment
on: issue_comment
permissions:
  contents: read
jobs:
  hear:
    runs-on: ubuntu-24.04
    steps:
      - env:
          BODY: ${{ github.event.comment.body }}
        run: echo "heard $BODY at $API_URL"
"""
STAGES = '[{"stage": "bad", "runs_on": ["self-hosted", "a10"]}, {"stage": "good", "runs_on": "ubuntu-latest"}]'


@pytest.fixture(scope="module")
def small_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("small")
    (source / ".github" / "workflows").mkdir(parents=True)
    (source / ".github" / "workflows" / "small.yml").write_text(WORKFLOW, encoding="utf-8")
    (source / ".github" / "workflows" / "comment.yml").write_text(COMMENT_WORKFLOW, encoding="utf-8")
    (source / ".gitignore").write_text("ignored/\n")
    (source / "ignored").mkdir()
    (source / "ignored" / "big").write_text("not copied\n")
    subprocess.run(["git", "init", "-q"], cwd=source, check=True, timeout=60)
    return working_tree_repo(source, tmp_path_factory.mktemp("small-repo"))


def test_the_working_tree_repository_holds_the_files_gitignore_keeps(small_repo: Path) -> None:
    files = sorted(str(path.relative_to(small_repo)) for path in small_repo.rglob("*"))
    assert [name for name in files if name != ".git" and not name.startswith(".git/")] == [
        ".github", ".github/workflows", ".github/workflows/comment.yml", ".github/workflows/small.yml", ".gitignore",
    ]  # fmt: skip


def test_pinned_actions_are_read_from_the_workflow() -> None:
    assert pinned_actions(WORKFLOW) == [UPLOAD, DOWNLOAD]


def test_each_job_has_its_result_and_log(act_runner: ActRunner, small_repo: Path) -> None:
    run = act_runner.run(
        small_repo / ".github/workflows/small.yml", small_repo, inputs={"stages": STAGES},
        secrets={"TOKEN": "s3cret-token"}, name="small",
    )  # fmt: skip
    assert run.results() == {
        "plan": JobResult.SUCCESS,
        "bad": JobResult.FAILURE,  # on the self-hosted label of a GPU runner, here
        "good": JobResult.SUCCESS,  # act says `failure`: the matrix's, since `bad` failed before it
        "never": JobResult.SKIPPED,
    }, run.summary()
    assert run.exit_code != 0
    good = run.job("good").text
    assert "stage good read planned, token of 12 characters: ***" in good, good  # act masks the secret
    assert "s3cret-token" not in run.log_path.read_text(encoding="utf-8")
    assert run.job("bad").matrix == {"stage": "bad", "runs_on": ["self-hosted", "a10"]}
    # the jobs' workspaces are gone once the run ended (a stage's holds a 2.2 GB .venv); the log stays
    assert not list((act_runner.scratch / "small" / "act").glob("*/hostexecutor")), "a job workspace was kept"


def test_a_run_without_stages_skips_the_matrix_job(act_runner: ActRunner, small_repo: Path) -> None:
    run = act_runner.run(small_repo / ".github/workflows/small.yml", small_repo, name="no-stages")
    assert (run.exit_code, run.ran()) == (0, ["plan"]), run.summary()


def test_an_event_payload_and_variables_reach_the_jobs(act_runner: ActRunner, small_repo: Path) -> None:
    """A comment event as GitHub sends it, on a runner label the workflow names literally (ubuntu-24.04)."""
    run = act_runner.run(
        small_repo / ".github/workflows/comment.yml", small_repo, event="issue_comment",
        payload={"comment": {"body": "/bot run"}}, env={"API_URL": "http://127.0.0.1:9"}, name="comment",
    )  # fmt: skip
    assert (run.exit_code, run.results()) == (0, {"hear": JobResult.SUCCESS}), run.summary()
    assert "heard /bot run at http://127.0.0.1:9" in run.job("hear").log


def test_lines_that_are_no_json_belong_to_no_job() -> None:
    assert parse_log('time="now" level=debug msg="start-up"\n[1, 2]\n') == ()
