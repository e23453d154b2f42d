"""The perf gate on recorded values in a real SQLite history (no timing): stage modes, the graph rule, the
skip when the target branch regressed already; baselines set from the history's median; trend and config errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.errors import PerfError
from ci_tool.history.perf_results import PerfResult, latest_post_merge, record_perf_results
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.baselines import Baseline, load_baselines
from ci_tool.perf.config import load_config
from ci_tool.perf.gate import judge
from ci_tool.stages.modes import PerfGate

CASE = "gpu-gemma_like-pool4g-b80"
BASE = {"decode_tokens_per_s": Baseline(CASE, "H200", "decode_tokens_per_s", 1000.0, 0.10)}


def row(run: str, value: float, *, post_merge: bool, at: float) -> PerfResult:
    passed = PerfVerdict.PASSED
    return PerfResult(run, "S", CASE, "H200", "decode_tokens_per_s", value, passed, at, post_merge=post_merge,
                      branch="main", commit=f"c{run}")  # fmt: skip


@pytest.mark.parametrize(
    ("gate", "value", "verdict"),
    [
        pytest.param(PerfGate.FAIL, 850.0, PerfVerdict.REGRESSED, id="pre-merge-regression-fails"),
        pytest.param(PerfGate.WARN, 850.0, PerfVerdict.WARNED, id="post-merge-regression-warns"),
        pytest.param(PerfGate.NONE, 850.0, PerfVerdict.RECORDED, id="functional-only-records"),
        pytest.param(PerfGate.FAIL, 950.0, PerfVerdict.PASSED, id="within-threshold-passes"),
    ],
)
def test_the_stage_gate_decides(gate: PerfGate, value: float, verdict: PerfVerdict) -> None:
    [judged] = judge({"decode_tokens_per_s": value}, BASE, gate=gate, requires_graphs=True)
    assert judged.verdict is verdict


@pytest.mark.parametrize("gate", list(PerfGate), ids=[g.value for g in PerfGate])
def test_lost_coverage_always_fails(gate: PerfGate) -> None:
    judged = judge({"graph_coverage": 7 / 9, "eager_steps": 24.0}, {}, gate=gate, requires_graphs=True)
    assert [j.verdict for j in judged] == [PerfVerdict.LOST_COVERAGE] * 2
    assert judged[0].note == "lost CUDA-graph coverage: 78% of the capture sizes captured, 24 step(s) eager"


def test_gating_is_skipped_when_the_target_branch_regressed_already(tmp_path: Path) -> None:
    with HistoryStore(tmp_path / "h.sqlite") as store:
        rows = [row("r1", 990.0, post_merge=True, at=1.0), row("r2", 840.0, post_merge=True, at=2.0)]
        record_perf_results(store, [*rows, row("r3", 1200.0, post_merge=False, at=3.0)])
        latest = latest_post_merge(store, CASE, gpu="H200", metric="decode_tokens_per_s", branch="main")
    assert latest is not None and latest.run_id == "r2"
    [judged] = judge({"decode_tokens_per_s": 850.0}, BASE, gate=PerfGate.FAIL, requires_graphs=True,
                     target_latest={"decode_tokens_per_s": latest.value})  # fmt: skip
    assert judged.verdict is PerfVerdict.SKIPPED
    assert judged.note == "not gated: main's newest post-merge result (840) is 16.0% worse than the baseline too"


def test_baseline_set_takes_the_median_of_recorded_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "h.sqlite"
    with HistoryStore(history) as store:
        record_perf_results(store, [row(f"r{i}", v, post_merge=True, at=float(i)) for i, v in
                                    enumerate([500.0, 1000.0, 1010.0, 850.0])])  # fmt: skip
    folder = tmp_path / "baselines"
    args = ["perf", "baseline", "set", "--gpu", "H200", "--history", str(history), "--baselines", str(folder),
            "--runs", "3"]  # fmt: skip
    assert main(args) == 0
    baseline = load_baselines(folder, "H200")[(CASE, "decode_tokens_per_s")]
    assert (baseline.value, baseline.threshold, baseline.runs, baseline.commit) == (1000.0, 0.10, 3, "cr3")
    diff = ["perf", "baseline", "diff", "--gpu", "H200", "--history", str(history), "--baselines", str(folder)]
    assert main(diff) == 1
    assert "| 850 | 1000 | -15.0% | **regressed**: `decode_tokens_per_s 850" in capsys.readouterr().out
    png = tmp_path / "trend.png"
    trend = ["perf", "trend", CASE, "--gpu", "H200", "--history", str(history), "--baselines", str(folder), "--png"]
    assert main([*trend, str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


S = ("version: 1\nmodel: gemma-like\nserver_configs:\n- name: a\n  max_batch_size: 8\n"
     "  kv_cache_config: {budget_gib: 1}\n")
CLIENTS = "  client_configs:\n"
ONE = "  - {name: b, concurrency: 1, input_len: 1, output_len: 1}\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "c.yaml: expected a perf-sanity config (version, model, server_configs), found an empty file "
                     "Hint: copy an existing config in the same folder", id="empty"),
        pytest.param("version: 2\n" + S.split("\n", 1)[1] + CLIENTS + ONE,
                     "c.yaml:1:10 (version): expected version 1, found 2", id="wrong-version"),
        pytest.param("version: 1\nmodel: gemma-lik\nserver_configs: []\n",
                     "c.yaml: 2 problems, each on a line below\n  {dir}/c.yaml:2:8 (model): expected a model preset, "
                     "found 'gemma-lik' Hint: did you mean 'gemma-like' or 'llama-like'?\n  {dir}/c.yaml:3:17 "
                     "(server_configs): expected a non-empty list of server configs, found an empty list",
                     id="unknown-model"),
        pytest.param(S.replace("max_batch_size: 8", "max_batch_size: 0") + CLIENTS + ONE,
                     "c.yaml:5:19 (server_configs[0].max_batch_size): expected an integer >= 1, found 0",
                     id="bad-batch"),
        pytest.param(S.replace("name: a", "name: a-b") + CLIENTS + ONE,
                     "c.yaml:4:9 (server_configs[0].name): expected a name of [a-z0-9_]+, found 'a-b' Hint: use "
                     "underscores: a dash separates the parts of a case id", id="dash-in-name"),
        pytest.param(S + "  cuda_graphs: requird\n" + CLIENTS + ONE,
                     "c.yaml:7:16 (server_configs[0].cuda_graphs): expected required, enabled or off, found 'requird' "
                     "Hint: did you mean 'required'?", id="bad-graph-policy"),
        pytest.param(S.replace("budget_gib: 1", "budget_gib: 0") + CLIENTS + ONE,
                     "c.yaml:6:33 (server_configs[0].kv_cache_config.budget_gib): expected a budget in GiB > 0, "
                     "found 0", id="zero-budget"),
        pytest.param(S + CLIENTS + ONE.replace("concurrency: 1", "concurrency: 9"),
                     "c.yaml:8:28 (server_configs[0].client_configs[0].concurrency): expected a concurrency <= "
                     "max_batch_size 8, found 9 Hint: raise max_batch_size or lower the concurrency",
                     id="concurrency-over-batch"),
        pytest.param(S + CLIENTS + ONE + ONE,
                     "c.yaml:9:12 (server_configs[0].client_configs[1].name): expected each name once, found 'b' "
                     "again Hint: rename one of them", id="duplicate-client"),
        pytest.param(S + CLIENTS + "  - {name: b, concurrency: 1, input_len: 1}\n",
                     "c.yaml:8:5 (server_configs[0].client_configs[0]): expected the key 'output_len', found none "
                     "Hint: add `output_len:`", id="missing-output-len"),
        pytest.param(S + CLIENTS + ONE.replace("}", ", cpu: {hiden_size: 64}}"),
                     "c.yaml:8:66 (server_configs[0].client_configs[0].cpu.hiden_size): expected one of hidden_size, "
                     "budget_gib, max_batch_size, concurrency, input_len, output_len, rounds, warmup_rounds, found key "
                         "'hiden_size' Hint: "
                     "did you mean 'hidden_size'?", id="unknown-cpu-key"),
        pytest.param(S + CLIENTS + "  - {name: b, concurrency: 4, input_len: 1, output_len: 1, "
                     "cpu: {max_batch_size: 2}}\n",
                     "c.yaml:8:65 (server_configs[0].client_configs[0].cpu): expected a concurrency <= max_batch_size "
                     "2, found 4 Hint: raise max_batch_size or lower the concurrency", id="cpu-concurrency-over-batch"),
    ],
)  # fmt: skip
def test_config_errors_are_located(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(PerfError) as error:
        load_config(path, models=("gemma-like", "llama-like"))
    assert str(error.value) == f"{tmp_path}/{message.format(dir=tmp_path)}"
