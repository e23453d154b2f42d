"""The perf fixture when the history fails it after it opened (a server gone mid-run, a damaged table): each
case still gates and passes on its numbers, the loss is one warning, and the process does not ask that
history again (a server that stopped answering would cost every later case its deadline). A real pytest
process runs two cases of the real configs against a real SQLite file whose perf table is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ci_tool.history.store import HistoryStore

ROOT = Path(__file__).resolve().parents[3]
CASES = """\
import pytest

from ci_tool.perf.config import CONFIG_DIR, Mode, load_configs
from ci_tool.perf.fixture import perf_sanity  # noqa: F401  (the fixture)
from kvengine.loader import preset_names

ROOT = {root!r}
CASES = [case for config in load_configs(__import__("pathlib").Path(ROOT) / CONFIG_DIR, models=preset_names())
         for case in config.cases if case.mode is Mode.CPU][:2]


@pytest.mark.parametrize("case", CASES, ids=[case.case_id for case in CASES])
def test_case(case, perf_sanity):
    perf_sanity.report(case, {{"decode_tokens_per_s": 100.0, "step_latency_p50_ms": 1.0}}, rounds=1)
"""


def test_a_history_that_fails_after_opening_costs_one_warning_and_no_case(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    with HistoryStore(history) as store:
        store.db.execute("DROP TABLE perf_results")  # type: ignore[attr-defined]
        store.db.commit()  # type: ignore[attr-defined]
    (tmp_path / "test_cases.py").write_text(CASES.format(root=str(ROOT)))
    environment = {**os.environ, "CI_TOOL_HISTORY": str(history), "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}",
                   "CI_TOOL_PERF_GATE": "fail"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "always", "test_cases.py"],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
    assert done.stdout.count("perf results not recorded: ") == 1, done.stdout
