"""The perf cases of the checked-in perf configs ($CI_TOOL_PERF_CONFIGS or perf/configs), which
test_perf_sanity.py runs and tests/perf/second_process.py measures again in a fresh process."""

from __future__ import annotations

import os
from pathlib import Path

from ci_tool.perf.config import CONFIG_DIR, load_configs
from kvengine.loader import preset_names

ROOT = Path(__file__).resolve().parents[2]


CONFIGS = Path(os.environ.get("CI_TOOL_PERF_CONFIGS") or ROOT / CONFIG_DIR)


CASES = [case for config in load_configs(CONFIGS, models=preset_names()) for case in config.cases]
