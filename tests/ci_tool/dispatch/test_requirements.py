"""A checkout run without installing ci-tool may lack python-jenkins or PyGithub: the command that needs one says
which to install, in one line, instead of an unexpected error (dispatch/requirements.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.dispatch.requirements import client_module
from ci_tool.errors import DispatchError
from tests.helpers.bot_handle import ALLOWLIST, CATALOG, MakeEvent
from tests.helpers.fake_github import FakeGitHub

ROOT = Path(__file__).resolve().parents[3]
# What a machine without python-jenkins does with this checkout on sys.path: `import jenkins` finds the
# pipelines' folder as a namespace package. A finder ahead of the others plays that, python-jenkins installed.
WITHOUT_PYTHON_JENKINS = f"""
import importlib.machinery, sys
class PipelinesFolder:
    def find_spec(self, name, path=None, target=None):
        if name != "jenkins":
            return None
        spec = importlib.machinery.ModuleSpec("jenkins", None, is_package=True)
        spec.submodule_search_locations = [{str(ROOT / "jenkins")!r}]
        return spec
sys.meta_path.insert(0, PipelinesFolder())
from ci_tool.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_namespace_package_in_place_of_the_client_is_named_with_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pipelines_like").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(DispatchError) as refused:
        client_module("pipelines_like", client="Jenkins", distribution="python-jenkins")
    assert str(refused.value) == (
        "expected the `python-jenkins` package (module `pipelines_like` with `pipelines_like.Jenkins`): "
        f"`pipelines_like` is {tmp_path / 'pipelines_like'}, which has no `Jenkins`. "
        "Hint: pip install 'python-jenkins' (installing ci-tool, `pip install -e .`, installs it)"
    )


def test_a_missing_client_says_the_import_failed() -> None:
    with pytest.raises(DispatchError, match=r"^expected the `PyGithub` package \(module `no_such_client_xyz` with "
                       r"`no_such_client_xyz.Github`\): importing it failed \(No module named 'no_such_client_xyz'\)\. "
                       r"Hint: pip install 'PyGithub'"):  # fmt: skip
        client_module("no_such_client_xyz", client="Github", distribution="PyGithub")


def test_the_bot_without_python_jenkins_exits_1_naming_it(
    env: pytest.MonkeyPatch, event: MakeEvent, github: FakeGitHub
) -> None:
    argv = ["bot", "handle", "--event", str(event("/bot run")), "--allowlist", ALLOWLIST, *CATALOG,
            "--poll-seconds", "0", "--retry-seconds", "0"]  # fmt: skip
    done = subprocess.run([sys.executable, "-c", WITHOUT_PYTHON_JENKINS, *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert (done.returncode, "unexpected" in done.stderr) == (1, False), done.stderr
    assert done.stderr.splitlines()[-1] == (
        "error: expected the `python-jenkins` package (module `jenkins` with `jenkins.Jenkins`): "
        f"`jenkins` is {ROOT / 'jenkins'}, which has no `Jenkins`. "
        "Hint: pip install 'python-jenkins' (installing ci-tool, `pip install -e .`, installs it)"
    ), done.stderr
    assert github.bodies() == [], "the bot answered nothing it could not carry out"
