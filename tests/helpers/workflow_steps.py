"""The repository's GitHub workflows read as data, for the bot and approval workflow tests: each workflow's YAML
(`load`), the labels and signal the approval workflows use, and the local tools (`tool`) that lint them."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml


def tool(name: str) -> str:
    """The tool from this environment's bin folder (where `pip install '.[test]'` puts it), else from PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install '.[test]' installs it)")
    return found


WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"


SIGNAL, LABELS, BOT = (WORKFLOWS / f"{name}.yml" for name in ("approval-signal", "approval-labels", "bot"))


def load(path: Path) -> dict[str, object]:
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true
    return workflow  # type: ignore[no-any-return]
