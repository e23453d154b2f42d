"""`stage show` and `stage run --dry-run` render with the facts the stage's runner will have, the stage name's
(a condition on a fact only the runner knows matches), unless --system-info names a machine; both say
which facts they used, in one line, and so agree with each other on any host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.cli import main

CATALOG = "version: 1\nfamilies:\n- {name: A10-PyTorch, platform: a10, context: l0_x, splits: 1}\n"
# The second block asks for the distribution the GPU runners run. The stage name does not say it (a GPU
# stage's distribution is its runner's), so it matches, as on the runner; this machine's distribution
# (any, in a dry run before) or a --system-info file's decides only when asked for.
TEST_DB = """\
version: 0.0.1
l0_x:
- condition: {}
  tests:
  - tests/test_a.py
- condition:
    terms: {linux_distribution_name: ubuntu}
  tests:
  - tests/test_ubuntu_only.py
"""
STAGE_NAME_FACTS = (
    "facts: the stage name's only (conditions on machine facts match); --system-info FILE renders for a machine"
)
OTHER_DISTRO = {"gpu": "A10", "system_gpu_count": 1, "linux_distribution_name": "fedora"}


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "jenkins").mkdir()
    (tmp_path / "jenkins" / "stages.yml").write_text(CATALOG)
    (tmp_path / "test-db").mkdir()
    (tmp_path / "test-db" / "l0_x.yml").write_text(TEST_DB)
    (tmp_path / "fedora.json").write_text(json.dumps(OTHER_DISTRO))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CI_TOOL_HISTORY", str(tmp_path / "history.sqlite"))
    return tmp_path


def rendered(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.strip().startswith("tests/")]


# id -> (argv, the facts line, the test lines it prints)
CASES = {
    "show, stage-name facts": (["stage", "show", "A10-PyTorch-1"], STAGE_NAME_FACTS, 2),
    "dry run, stage-name facts": (["stage", "run", "A10-PyTorch-1", "--dry-run"], STAGE_NAME_FACTS, 2),
    "show, a machine's facts": (["stage", "show", "A10-PyTorch-1", "--system-info", "fedora.json"],
                                "facts: fedora.json (--system-info) under the stage name's", 1),
    "dry run, a machine's facts": (["stage", "run", "A10-PyTorch-1", "--dry-run", "--system-info", "fedora.json"],
                                   "facts: fedora.json (--system-info) under the stage name's", 1),
}  # fmt: skip


@pytest.mark.parametrize(("argv", "facts", "lines"), CASES.values(), ids=CASES.keys())
def test_show_and_dry_run_render_with_the_facts_they_name(
    argv: list[str], facts: str, lines: int, checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(argv)
    out = capsys.readouterr().out
    assert code == 0
    assert facts in out.splitlines()
    expected = ["tests/test_a.py", "tests/test_ubuntu_only.py"][:lines]
    assert sorted(set(rendered(out))) == expected


def test_show_and_dry_run_agree_without_system_info(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["stage", "show", "A10-PyTorch-1"])
    shown = rendered(capsys.readouterr().out)
    main(["stage", "run", "A10-PyTorch-1", "--dry-run"])
    dry_run = rendered(capsys.readouterr().out)
    assert set(shown) == set(dry_run) == {"tests/test_a.py", "tests/test_ubuntu_only.py"}
