"""Change points where people see them, on recorded series in a real SQLite history (no timing): `perf trend`
prints each with its commit range and draws it, the dashboard's perf page marks it, and a post-merge stage
(a real pytest process with the perf_sanity fixture) warns about a new one for the worse with its range."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history.perf_results import PerfResult, perf_series, record_perf_results, run_perf_results
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.shifts import new_regressions, series_shifts
from ci_tool.report.dashboard import perf_page

ROOT = Path(__file__).resolve().parents[3]
CASE = "cpu-gemma_like-pool4g-b80"
TPS = "decode_tokens_per_s"
# post-merge medians per run: the slower attention path landed in commit c9
STEP = [1504.0, 1501.0, 1511.0, 1498.0, 1509.0, 1504.0, 1495.0, 1507.0, 1502.0, 1356.0, 1349.0, 1361.0, 1353.0]


def _rows(values: list[float], *, start: int = 0) -> list[PerfResult]:
    return [PerfResult(f"r{i}", "S", CASE, "cpu", TPS, v, PerfVerdict.PASSED, float(i), post_merge=True,
                       branch="main", commit=f"c{i}") for i, v in enumerate(values, start)]  # fmt: skip


def test_a_series_shift_names_its_levels_and_commit_range() -> None:
    [shift] = series_shifts(_rows(STEP))
    assert shift.line() == (
        "change point at run 10 of 13: decode_tokens_per_s 1504 -> 1354 tokens/s (9.9% worse), commits c8..c9 "
        "(p = 0.005)"
    )


@pytest.mark.parametrize(
    ("values", "new"),
    [
        pytest.param(STEP, [], id="known-since-the-run-before"),
        pytest.param(STEP[:12], ["c8..c9"], id="brought-to-light-by-the-newest-run"),
        pytest.param([1504.0, 1501.0, 1511.0, 1498.0, 1509.0, 1504.0, 1646.0, 1650.0, 1641.0], [],
                     id="a-change-for-the-better-is-no-regression"),
        pytest.param(STEP[:11], [], id="two-runs-after-a-step-are-too-few"),
    ],
)
def test_new_regressions_are_those_the_newest_run_revealed(values: list[float], new: list[str]) -> None:
    assert [s.commit_range for s in new_regressions(_rows(values))] == new


def test_perf_trend_prints_and_draws_the_change_points(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "h.sqlite"
    with HistoryStore(history) as store:
        record_perf_results(store, _rows(STEP))
    png = tmp_path / "trend.png"
    args = ["perf", "trend", CASE, "--gpu", "cpu", "--history", str(history), "--baselines", str(tmp_path / "b"),
            "--png", str(png)]  # fmt: skip
    assert main(args) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "1 change point(s) (E-Divisive means)",
        "  change point at run 10 of 13: decode_tokens_per_s 1504 -> 1354 tokens/s (9.9% worse), commits c8..c9 "
        "(p = 0.005)",
    ]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(args[:-2]) == 0  # without --png: the change points alone
    assert capsys.readouterr().out.splitlines()[:2] == [f"13 run(s) of {CASE} {TPS} on cpu",
                                                        "1 change point(s) (E-Divisive means)"]  # fmt: skip


def test_the_perf_page_marks_and_lists_change_points() -> None:
    html = perf_page([_rows(STEP), _rows([1.0, 1.0, 1.0])], {}, window=50, nav=())
    assert html.count('class="change-point"') == 1
    assert "commits c8..c9" in html and "<span class=\"muted\">none</span>" in html


CONFTEST = "from ci_tool.perf.fixture import perf_sanity  # noqa: F401\n"
SUITE = f"""
from pathlib import Path
from ci_tool.perf.config import load_config

CASE = [c for c in load_config(Path({str(ROOT / "tests/scripts/perf-sanity/gemma_like.yaml")!r})).cases
        if c.case_id == {CASE!r}][0]

def test_case(perf_sanity):
    perf_sanity.report(CASE, {{{TPS!r}: 1352.0, "eager_steps": 0.0}}, noise={{{TPS!r}: 3.0}}, rounds=5)
"""


def test_a_post_merge_stage_warns_about_a_new_change_point(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    with HistoryStore(history) as store:
        record_perf_results(store, _rows(STEP[:11]))
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_case.py").write_text(SUITE)
    env = {**os.environ, "CI_TOOL_HISTORY": str(history), "CI_TOOL_STAGE": "CPU-Generic-PerfSanity-Post-Merge-1",
           "CI_TOOL_RUN_ID": "r11", "CI_TOOL_COMMIT": "c11", "CI_TOOL_PERF_GATE": "warn",
           "CI_TOOL_PERF_BASELINES": str(tmp_path / "none"), "PYTHONPATH": str(ROOT)}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_case.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    line = ("new change point at run 10 of 12: decode_tokens_per_s 1504 -> 1352 tokens/s (10.1% worse), commits "
            "c8..c9 (p = 0.010)")  # fmt: skip
    assert f"PerfRegressionWarning: {CASE} on cpu: {line}" in done.stdout
    with HistoryStore(history) as store:
        [tps] = [r for r in run_perf_results(store, "r11") if r.metric == TPS]
        assert len(perf_series(store, CASE, gpu="cpu", metric=TPS)) == 12
    assert (tps.verdict, tps.note, tps.noise, tps.rounds) == (PerfVerdict.WARNED, line, 3.0, 5)
