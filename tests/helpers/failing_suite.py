"""The deliberately failing suite (tests/fixtures/failing_suite) and how the ci_tool tests plan and run it:
a copy of it, a session config for that copy, and its catalog's stages planned on a machine without a GPU."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.run.session import PlannedStage, SessionConfig, catalog_stages
from ci_tool.stages.catalog_load import open_catalog

FAILING_SUITE = Path(__file__).resolve().parents[1] / "fixtures" / "failing_suite"


def copy_suite(target: Path) -> Path:
    """Copy tests/fixtures/failing_suite to `target` (tests must not write into the repository)."""
    shutil.copytree(FAILING_SUITE, target)
    return target


def session_config(root: Path, **overrides: object) -> SessionConfig:
    values: dict[str, object] = {
        "rootdir": root,
        "results_root": root / ".ci-tool" / "runs",
        "history": root / ".ci-tool" / "history.sqlite",
        "sysinfo": {"gpu": None, "system_gpu_count": 0},
        "flaky_signatures": load_flaky_signatures(),
    }
    values.update(overrides)
    return SessionConfig(**values)  # type: ignore[arg-type]


def planned(root: Path, names: tuple[str, ...] | None = None, *, waives: bool = True) -> list[PlannedStage]:
    """The stages of the suite's catalog (all of them, or `names`), planned on a machine without a GPU."""
    loaded = open_catalog(root / "stages.yml", root / "test-db")
    stages = [loaded.catalog.stage(name) for name in names] if names else list(loaded.catalog.stages)
    waives_file = str(root / "test-db" / "waives.txt") if waives else None
    sysinfo = {"gpu": None, "system_gpu_count": 0}
    return catalog_stages(stages, planner=replace(loaded.planner, sysinfo=sysinfo, waives_file=waives_file))
