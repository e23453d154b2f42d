"""What the bot announces is what CI selects: one real git pull request per kind of change, and the bot's
reply to `/bot run` (`bot handle` against the GitHub and Jenkins fakes, from a checkout of the base branch as
the bot workflow runs it), `stage select --base` for the Jenkins and the GitHub engine, and a local
`ci-tool run --base --plan-only` (from the pull request's checkout) all name the same stages. The local run
narrows a family's list (`<family>-<K>-cbts` stages), the pipelines run its whole shards: they agree on
the families."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tool.cli import main
from tests.ci_tool.dispatch.conftest import ALLOWLIST, PR, REPOSITORY, MakeEvent
from tests.ci_tool.dispatch.fakes import FakeGitHub, FakeJenkins
from tests.ci_tool.dispatch.git_pulls import A10_WAIVE, commit_all, git, make_repository, serve_pull

_STAGE_ROW = re.compile(r"^\| `([^`]+)` \| `[^`]+` \| \d+/\d+ \|")
_NARROWED = re.compile(r"(-\d+)?(-cbts)?$")
ALL_PRE_MERGE = ["CPU-Generic-1", "CPU-Generic-2", "CPU-Generic-3", "A10-PyTorch-1", "A10-PyTorch-2",
                 "DGX_H100-PyTorch-1", "CPU-Build_Docs"]  # fmt: skip


def _edit(path: str, old: str, new: str) -> Callable[[Path], None]:
    def change(root: Path) -> None:
        text = (root / path).read_text() if (root / path).exists() else ""
        assert old in text, f"{path} lacks {old!r}"
        (root / path).write_text(text.replace(old, new, 1) if old else text + new)

    return change


# id -> (the pull request's change, the stages the pipelines and the bot run, the families a local run runs)
CHANGES: dict[str, tuple[Callable[[Path], None], list[str], list[str]]] = {
    "unwaive": (_edit("test-db/waives.txt", A10_WAIVE, ""), ["A10-PyTorch-1", "A10-PyTorch-2"], ["A10-PyTorch"]),
    "new waive": (_edit("test-db/waives.txt", "", "tests/engine/test_attention.py SKIP (https://bugs.example/3)\n"),
                  [], []),
    "test-db entry added": (_edit("test-db/l0_cpu.yml", "", "  - tests/tools/test_new.py\n"),
                            ["CPU-Generic-1", "CPU-Generic-2", "CPU-Generic-3"], ["CPU-Generic"]),
    "test file changed": (_edit("tests/tools/test_cli.py", "pass", "assert True"),
                          ["CPU-Generic-1", "CPU-Generic-2", "CPU-Generic-3"], ["CPU-Generic"]),
    "docs only": (_edit("docs/guide.md", "# Guide", "# The guide"), ["CPU-Build_Docs"], ["CPU-Build_Docs"]),
    "source file": (_edit("src/pool.py", "return 1", "return 2"), ALL_PRE_MERGE,
                    ["CPU-Generic", "A10-PyTorch", "DGX_H100-PyTorch", "CPU-Build_Docs"]),
}  # fmt: skip


def selected(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("+ ")]


def families(names: list[str]) -> list[str]:
    return list(dict.fromkeys(_NARROWED.sub("", name) for name in names))


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    return captured.out


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_the_bot_the_pipelines_and_a_local_run_select_the_same_stages_for_one_pull_request(
    change: tuple[Callable[[Path], None], list[str], list[str]],
    env: pytest.MonkeyPatch,
    event: MakeEvent,
    github: FakeGitHub,
    jenkins: FakeJenkins,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    edit, stages, local_families = change
    root = make_repository(tmp_path / "repo")
    git(root, "checkout", "-q", "-b", "pr")
    edit(root)
    commit_all(root, "the pull request")
    serve_pull(github, REPOSITORY, PR, root, base="main", head="pr")
    git(root, "worktree", "add", "-q", str(tmp_path / "default-branch"), "main")

    env.chdir(tmp_path / "default-branch")  # the bot workflow checks out the default branch, never the PR
    cli(capsys, "bot", "handle", "--event", str(event("/bot run")), "--allowlist", ALLOWLIST,
        "--catalog", "stages.yml", "--poll-seconds", "0", "--retry-seconds", "0")  # fmt: skip
    (reply,) = github.bodies()
    bot = [found.group(1) for line in reply.splitlines() if (found := _STAGE_ROW.match(line))]
    head = git(root, "rev-parse", "pr").strip()
    fork = git(root, "rev-parse", "main").strip()
    assert f"**Preview** from the pull request's change {fork[:12]}..{head[:12]} read from GitHub: " in reply

    env.chdir(root)  # CI checks out the pull request's head
    select = ("stage", "select", "--request", "request.json", "--catalog", "stages.yml", "--base", "main")
    on_jenkins = selected(cli(capsys, *select, "--engine", "jenkins"))
    on_github = selected(cli(capsys, *select, "--engine", "github"))
    local = selected(cli(capsys, "run", "--base", "main", "--catalog", "stages.yml", "--plan-only"))

    assert (bot, on_jenkins, on_github) == (stages, stages, stages)
    assert families(local) == local_families
