"""The act harness (act_runner.py) as fixtures: `act_runner` runs a workflow for real on this machine (a
skip, saying why, where act, node or GitHub's actions are missing: .ci/run fails on that skip), and
`working_tree` is this checkout's working tree as a fresh git repository for it to run in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ci_tool.actions.act_runner import ROOT, ActRunner, act_binary, why_not, with_light_build, working_tree_repo

WORKFLOWS = ROOT / ".github" / "workflows"


@pytest.fixture(scope="session")
def act_runner(tmp_path_factory: pytest.TempPathFactory) -> ActRunner:
    reason = why_not(sorted(WORKFLOWS.glob("*.yml")))
    act = act_binary()
    if reason is not None or act is None:
        pytest.skip(reason or "act is not installed")
    return ActRunner(act=act, scratch=tmp_path_factory.mktemp("act"))


@pytest.fixture(scope="session")
def working_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's working tree, committed into a new repository of its own, with a light build: the jobs'
    workspaces are copies of it, and nothing a job does reaches the checkout."""
    return with_light_build(working_tree_repo(ROOT, tmp_path_factory.mktemp("repo")))
