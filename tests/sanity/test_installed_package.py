"""Smoke tests of an installed ci-tool: the package-sanity stage (CPU-PackageSanityCheck-*) runs them with the
python of a fresh environment that holds only the built wheel, so a module, script or data file the wheel
lacks fails here. They hold in a development checkout too (the editable install has the same files)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

from ci_tool.run.flaky import load_flaky_signatures


def run(*command: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(part) for part in command], capture_output=True, text=True, check=False, timeout=120)


def test_the_console_script_is_installed_and_runs() -> None:
    done = run(Path(sys.executable).parent / "ci-tool", "stage", "parse", "DGX_H100-4_GPUs-PyTorch-1", "--json")
    assert (done.returncode, json.loads(done.stdout)["gpu_count"]) == (0, 4), done.stderr


def test_the_engine_presets_ship_with_the_package() -> None:
    done = run(sys.executable, "-m", "kvengine", "plan", "--preset", "gemma-like", "--budget-gib", "4", "--json")
    assert (done.returncode, json.loads(done.stdout)["model"]) == (0, "gemma-like"), done.stderr


def test_the_pipeline_templates_ship_with_the_package() -> None:
    templates = resources.files("ci_tool.generate") / "templates"
    names = {entry.name for entry in templates.iterdir()}
    assert {"L0_Test.groovy.j2", "L0_MergeRequest.groovy.j2", "l0-test.yml.j2"} <= names


def test_the_flaky_signatures_ship_with_the_package() -> None:
    assert len(load_flaky_signatures()) > 0
