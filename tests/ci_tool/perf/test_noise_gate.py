"""The noise-aware gate on recorded numbers (no timing): rounds summarised into a median and a robust noise,
a regression only past the threshold AND past 3x the combined noise, the verdict naming the numbers, the
rounds a config asks for, the noise kept in a real SQLite history and in the baselines."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.errors import PerfError
from ci_tool.history import schema
from ci_tool.history.perf_results import PerfResult, perf_series, record_perf_results
from ci_tool.history.schema import NOISE_STEP
from ci_tool.history.sqlite_backend import _apply
from ci_tool.history.store import SCHEMA_VERSION, HistoryStore
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.baselines import Baseline, load_baselines
from ci_tool.perf.config import Rounds, load_config
from ci_tool.perf.gate import judge
from ci_tool.perf.noise import Summary, robust_noise, summarize, summarize_rounds
from ci_tool.stages.modes import PerfGate

CASE = "gpu-gemma_like-pool4g-b80"
TPS = "decode_tokens_per_s"


@pytest.mark.parametrize(
    ("samples", "summary"),
    [
        pytest.param([5.1, 5.3, 5.2, 9.0, 5.2], Summary(5.2, 0.14826, 5), id="one-stray-round-ignored"),
        pytest.param([7.0], Summary(7.0, 0.0, 1), id="one-round-no-spread"),
        pytest.param([4.0, 4.0, 4.0], Summary(4.0, 0.0, 3), id="identical-rounds"),
        pytest.param([1.0, 2.0, 3.0, 4.0], Summary(2.5, 1.4826, 4), id="even-count-median"),
    ],
)
def test_rounds_summarise_as_median_and_mad(samples: list[float], summary: Summary) -> None:
    found = summarize(samples)
    assert (found.median, round(found.noise, 6), found.rounds) == (summary.median, summary.noise, summary.rounds)


def test_rounds_summarise_per_metric() -> None:
    rounds = [{TPS: 100.0, "eager_steps": 0.0}, {TPS: 110.0, "eager_steps": 0.0}, {TPS: 90.0, "eager_steps": 0.0}]
    found = summarize_rounds(rounds)
    assert {name: (s.median, round(s.noise, 4)) for name, s in found.items()} == {
        TPS: (100.0, 14.826), "eager_steps": (0.0, 0.0),
    }  # fmt: skip


# The seed's false alarm (an unchanged tree, a 13 % slower launch-bound case on a loaded host) and planted
# changes, as rounds recorded on an H200; the baseline as `perf baseline set` wrote it from five runs.
QUIET_BASELINE = Baseline(CASE, "H200", TPS, 15058.0, 0.10, runs=5, spread=120.0)
LOADED_ROUNDS = [13090.0, 14620.0, 12010.0, 15240.0, 11880.0]  # a CPU hog: the launches stall now and then
PLANTED_10 = [13540.0, 13560.0, 13520.0, 13555.0, 13530.0]  # 10 % extra per step, quiet host
PLANTED_3 = [14600.0, 14640.0, 14590.0, 14620.0, 14610.0]


@pytest.mark.parametrize(
    ("rounds", "baseline", "verdict", "note"),
    [
        pytest.param(LOADED_ROUNDS, QUIET_BASELINE, PerfVerdict.PASSED,
                     "within noise: decode_tokens_per_s 1.309e+04 tokens/s is 13.1% worse than its baseline 1.506e+04 "
                     "(threshold 10%; noise 1.91e+03 tokens/s = baseline 120 + run 1.79e+03, 3x = 38.1%)",
                     id="loaded-host-unchanged-tree-passes"),
        pytest.param(PLANTED_10, QUIET_BASELINE, PerfVerdict.REGRESSED,
                     "decode_tokens_per_s 1.354e+04 tokens/s is 10.1% worse than its baseline 1.506e+04 "
                     "(threshold 10%; noise 142 tokens/s = baseline 120 + run 22.2, 3x = 2.8%)",
                     id="planted-10-percent-is-caught"),
        pytest.param(PLANTED_3, QUIET_BASELINE, PerfVerdict.PASSED, "", id="planted-3-percent-never-flagged"),
        pytest.param(LOADED_ROUNDS[:1], Baseline(CASE, "H200", TPS, 15058.0, 0.10), PerfVerdict.REGRESSED,
                     "decode_tokens_per_s 1.309e+04 tokens/s is 13.1% worse than its baseline 1.506e+04 "
                     "(threshold 10%; noise 0 tokens/s = baseline 0 + run 0, 3x = 0.0%)",
                     id="one-round-no-spread-is-the-threshold-alone"),
    ],
)
def test_a_regression_is_past_the_threshold_and_the_noise(
    rounds: list[float], baseline: Baseline, verdict: PerfVerdict, note: str
) -> None:
    summary = summarize(rounds)
    [judged] = judge({TPS: summary.median}, {TPS: baseline}, gate=PerfGate.FAIL, requires_graphs=True,
                     noise={TPS: summary.noise})  # fmt: skip
    assert (judged.verdict, judged.note) == (verdict, note)


@pytest.mark.parametrize(
    ("value", "noise", "verdict"),
    [
        pytest.param(6.082, 0.05, PerfVerdict.REGRESSED, id="latency-15.5-percent-tight-rounds"),
        pytest.param(6.082, 0.40, PerfVerdict.PASSED, id="latency-15.5-percent-noisy-rounds"),
        pytest.param(5.0, 0.0, PerfVerdict.PASSED, id="latency-better"),
    ],
)
def test_lower_is_better_metrics_use_the_noise_too(value: float, noise: float, verdict: PerfVerdict) -> None:
    name = "step_latency_p50_ms"
    baseline = Baseline(CASE, "H200", name, 5.266, 0.15, runs=5, spread=0.05)
    [judged] = judge({name: value}, {name: baseline}, gate=PerfGate.FAIL, requires_graphs=True, noise={name: noise})
    assert judged.verdict is verdict


def test_config_rounds_default_and_cpu_cases_stay_at_one(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(_config("rounds: 7\nwarmup_rounds: 2\n", "cpu: {hidden_size: 64}"))
    gpu, cpu = load_config(path).cases
    assert (gpu.rounds, cpu.rounds) == (Rounds(7, 2), Rounds(1, 0))


def test_a_cpu_part_may_ask_for_rounds(tmp_path: Path) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(_config("", "cpu: {hidden_size: 64, rounds: 3}"))
    gpu, cpu = load_config(path).cases
    assert (gpu.rounds, cpu.rounds) == (Rounds(5, 1), Rounds(3, 0))


@pytest.mark.parametrize(
    ("top", "message"),
    [
        pytest.param("rounds: 0\n", "cfg.yaml:2:9 (rounds): expected an integer >= 1, found 0", id="zero-rounds"),
        pytest.param("warmup_rounds: many\n", "cfg.yaml:2:16 (warmup_rounds): expected an integer >= 0, found "
                     "'many'", id="words"),
    ],
)
def test_bad_rounds_are_located_errors(tmp_path: Path, top: str, message: str) -> None:
    path = tmp_path / "cfg.yaml"
    path.write_text(_config(top, ""))
    with pytest.raises(PerfError) as error:
        load_config(path)
    assert str(error.value).removeprefix(f"{tmp_path}/") == message


def _config(top: str, cpu: str) -> str:
    return (
        f"version: 1\n{top}model: gemma-like\nserver_configs:\n- name: s\n  max_batch_size: 8\n"
        "  kv_cache_config: {budget_gib: 1}\n  client_configs:\n"
        f"  - {{name: c, concurrency: 4, input_len: 8, output_len: 4{', ' + cpu if cpu else ''}}}\n"
    )


def _row(run: str, value: float, noise: float, at: float) -> PerfResult:
    return PerfResult(run, "S", CASE, "H200", TPS, value, PerfVerdict.PASSED, at, post_merge=True, branch="main",
                      commit=f"c{run}", noise=noise, rounds=5)  # fmt: skip


def test_the_history_keeps_noise_and_rounds(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        record_perf_results(store, [_row("r1", 100.0, 2.5, 1.0)])
        [found] = perf_series(store, CASE, gpu="H200", metric=TPS)
    assert (found.noise, found.rounds) == (2.5, 5)


def test_a_history_from_before_the_noise_step_reads_as_one_round(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with sqlite3.connect(path) as db:
        for statement in schema.SCHEMA.split(";"):
            db.execute(statement)
        for step, statements in schema.MIGRATIONS:
            if step < NOISE_STEP:
                for statement in statements:
                    _apply(db, statement)
        db.execute(f"INSERT INTO schema_version (version) VALUES ({NOISE_STEP - 1})")
        db.execute(f"INSERT INTO perf_results (run_id, stage, case_id, gpu, metric, value, verdict, recorded_at) "
                   f"VALUES ('old', 'S', '{CASE}', 'H200', '{TPS}', 99.0, 'passed', 1.0)")  # fmt: skip
    db.close()
    with HistoryStore(path) as store:
        [found] = perf_series(store, CASE, gpu="H200", metric=TPS)
        version = store.db.execute("SELECT version FROM schema_version").fetchall()
    assert (found.value, found.noise, found.rounds, version) == (99.0, 0.0, 1, [(SCHEMA_VERSION,)])


def test_baseline_set_records_the_spread_between_runs(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    with HistoryStore(history) as store:
        values = [(1000.0, 5.0), (1010.0, 4.0), (990.0, 6.0), (1030.0, 5.0), (1000.0, 3.0)]
        record_perf_results(store, [_row(f"r{i}", v, n, float(i)) for i, (v, n) in enumerate(values)])
    folder = tmp_path / "baselines"
    args = ["perf", "baseline", "set", "--gpu", "H200", "--history", str(history), "--baselines", str(folder)]
    assert main(args) == 0
    baseline = load_baselines(folder, "H200")[(CASE, TPS)]
    assert (baseline.value, round(baseline.spread, 4), baseline.runs) == (1000.0, round(robust_noise(
        [v for v, _ in values]), 4), 5)  # fmt: skip
    assert round(baseline.spread, 4) == 14.826  # MAD 10 between the runs, more than their own noise (5)


def test_baseline_spread_is_at_least_the_runs_own_noise(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    with HistoryStore(history) as store:
        record_perf_results(store, [_row(f"r{i}", 1000.0, 40.0, float(i)) for i in range(3)])
    folder = tmp_path / "baselines"
    args = ["perf", "baseline", "set", "--gpu", "H200", "--history", str(history), "--baselines", str(folder)]
    assert main(args) == 0
    assert load_baselines(folder, "H200")[(CASE, TPS)].spread == 40.0


def test_a_negative_spread_in_a_baseline_file_is_located(tmp_path: Path) -> None:
    (tmp_path / "H200.yaml").write_text(
        f"version: 1\ngpu: H200\nbaselines:\n  {CASE}:\n    {TPS}: {{value: 1.0, threshold: 0.1, spread: -2}}\n"
    )
    with pytest.raises(PerfError) as error:
        load_baselines(tmp_path, "H200")
    assert str(error.value).removeprefix(f"{tmp_path}/") == (
        f"H200.yaml:5:63 (baselines.{CASE}.{TPS}.spread): expected a spread >= 0, found -2 "
        "Hint: run `ci-tool perf baseline set`"
    )


def test_baselines_are_set_from_runs_of_the_cases_outside_any_stage(tmp_path: Path) -> None:
    """A baseline's runs are plain `pytest` runs of the cases (no stage: the stage column is empty); they
    read back and set the baseline, as on the H200 where every such row was left out as damaged."""
    history = tmp_path / "h.sqlite"
    with HistoryStore(history) as store:
        rows = [replace(_row(f"r{i}", v, 1.0, float(i)), stage="") for i, v in enumerate([90.0, 100.0, 110.0])]
        record_perf_results(store, rows)
    folder = tmp_path / "baselines"
    args = ["perf", "baseline", "set", "--gpu", "H200", "--history", str(history), "--baselines", str(folder)]
    assert main([*args, "--runs", "3"]) == 0
    baseline = load_baselines(folder, "H200")[(CASE, TPS)]
    assert (baseline.value, baseline.runs) == (100.0, 3)
