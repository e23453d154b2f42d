"""The perf cases of the checked-in perf configs ($CI_TOOL_PERF_CONFIGS or perf/configs), which
test_perf_sanity.py runs and tests/perf/second_process.py measures again in a fresh process; and the
environment of a perf run a test starts of its own."""

from __future__ import annotations

import os
from pathlib import Path

from ci_tool.perf.config import CONFIG_DIR, load_configs
from ci_tool.perf.handoff import PERF_RESULTS_ENV, PERF_SNAPSHOT_ENV
from kvengine.loader import preset_names

ROOT = Path(__file__).resolve().parents[2]


CONFIGS = Path(os.environ.get("CI_TOOL_PERF_CONFIGS") or ROOT / CONFIG_DIR)


CASES = [case for config in load_configs(CONFIGS, models=preset_names()) for case in config.cases]


def own_run_environment(**variables: str) -> dict[str, str]:
    """This process's environment with `variables` set (the run's own history, baselines, gate), less the
    handoff of a stage that may be running the test (ci_tool/perf/handoff.py): the run's rows, planted
    baselines' verdicts among them, must not travel into that stage's history and its report."""
    inherited = {k: v for k, v in os.environ.items() if k not in (PERF_RESULTS_ENV, PERF_SNAPSHOT_ENV)}
    return {**inherited, **variables}
