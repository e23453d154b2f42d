from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvengine.cli import main
from kvengine.errors import SpecError
from kvengine.loader import parse_spec

GOOD_SPEC = """\
name: tiny
layers:
  - {count: 3, num_kv_heads: 2, head_dim: 8, dtype: float32, window: 16}
  - {num_kv_heads: 2, head_dim: 8, dtype: float32, window: null}
runtime: {max_seq_len: 256, max_batch_size: 4, max_num_tokens: 64}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("preset", ["llama-like", "gemma-like", "deepseek-v4-like"])
def test_plan_json_has_the_documented_keys(capsys: pytest.CaptureFixture[str], preset: str) -> None:
    code, out, _ = run(capsys, "plan", "--preset", preset, "--budget-gib", "40", "--json")
    data = json.loads(out)
    assert code == 0
    assert {"max_seq_len", "max_batch_size", "pool_groups", "capture_sizes_ok", "capture_sizes_skipped"} <= set(data)
    keys = {"window", "num_slots", "bytes", "share"}
    assert [sorted(keys - set(group)) for group in data["pool_groups"]] == [[] for _ in data["pool_groups"]]
    assert sum(g["share"] for g in data["pool_groups"]) == pytest.approx(1.0, abs=1e-5)


def test_plan_text_for_a_spec_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(GOOD_SPEC)
    code, out, err = run(capsys, "plan", "--model", str(spec), "--budget-gib", "0.01", "--grain-bytes", "1")
    assert code == 0 and err == ""
    assert "largest request that fits: 256 tokens" in out
    assert "CUDA-graph batch sizes warmed up: 1, 2, 4" in out


def test_plan_json_window_is_null_for_full_attention(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(GOOD_SPEC)
    _, out, _ = run(capsys, "plan", "--model", str(spec), "--budget-gib", "0.01", "--json")
    assert [g["window"] for g in json.loads(out)["pool_groups"]] == [16, None]


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        pytest.param(
            ["plan", "--preset", "gema-like", "--budget-gib", "1"],
            1,
            "error: unknown preset 'gema-like'. Hint: did you mean 'gemma-like' or 'llama-like'? "
            "valid: deepseek-v4-like, gemma-like, llama-like\n",
            id="unknown-preset",
        ),
        pytest.param(
            ["plan", "--preset", "gemma-like", "--budget-gib", "4", "--avg-seq-len", "99999"],
            1,
            "error: avg_seq_len must be <= max_seq_len 32768, found 99999. Hint: lower --avg-seq-len or "
            "leave it unset for the allocator fallback\n",
            id="avg-above-max",
        ),
        pytest.param(
            ["plan", "--preset", "gemma-like", "--budget-gib", "4", "--pool-ratio", "0.5,x"],
            1,
            "error: --pool-ratio must be comma-separated numbers, found '0.5,x'. Hint: e.g. --pool-ratio 0.7,0.3\n",
            id="bad-ratio",
        ),
        pytest.param(
            ["plan", "--preset", "gemma-like", "--budget-gib", "4", "--pool-ratio", "1.0"],
            1,
            "error: pool_ratio needs one weight per life cycle (2: window 1024, full), found 1. "
            "Hint: list the weights in the order the plan prints the life cycles\n",
            id="ratio-length",
        ),
        pytest.param(
            ["plan", "--preset", "gemma-like", "--budget-gib", "0"],
            1,
            "error: --budget-gib must be > 0, found 0.0. Hint: pass e.g. --budget-gib 8\n",
            id="zero-budget",
        ),
        pytest.param(
            ["plan", "--model", "/nonexistent.yaml", "--budget-gib", "1"],
            1,
            "error: cannot read model spec '/nonexistent.yaml': No such file or directory. Hint: check the path\n",
            id="missing-file",
        ),
    ],
)
def test_plan_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str) -> None:
    got_code, out, err = run(capsys, *argv)
    assert (got_code, out, err) == (code, "", message)


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "--budget-gib", "1")
    assert code == 2 and "one of the arguments --model --preset is required" in err


def test_floors_above_budget_exit_1_with_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "--preset", "gemma-like", "--budget-gib", "0.1")
    assert code == 1 and err.count("\n") == 1
    assert err.startswith("error: KV-cache pool floors need 250.00 MiB (262144000 bytes) but the budget is 102.00 MiB ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "name: x\nlayers: []\nruntime: {max_seq_len: 8, max_batch_size: 1}\n",
            "spec.yaml:2:9 (layers): expected a non-empty list of layer entries, found [].",
            id="no-layers",
        ),
        pytest.param(
            GOOD_SPEC.replace("window: 16", "windw: 16"),
            "spec.yaml:3:62 (layers[0].windw): expected a known key, found 'windw'. Hint: did you mean "
            "'window'? valid: count, dtype, head_dim, key_only, num_kv_heads, num_q_heads, sink_tokens, "
            "window",
            id="typo-key",
        ),
        pytest.param(
            GOOD_SPEC.replace("dtype: float32, window: 16", "dtype: flaot32, window: 16"),
            "spec.yaml:3:53 (layers[0].dtype): expected a known dtype, found 'flaot32'. Hint: did you "
            "mean 'float32'? valid: bfloat16, float16, float32, fp8_e4m3",
            id="typo-dtype",
        ),
        pytest.param(
            GOOD_SPEC.replace("head_dim: 8, dtype: float32, window: 16", "head_dim: 0, dtype: float32, window: 16"),
            "spec.yaml:3:43 (layers[0].head_dim): expected an integer >= 1, found 0.",
            id="zero-head-dim",
        ),
        pytest.param(
            GOOD_SPEC.replace("max_seq_len: 256, ", ""),
            "spec.yaml:5:10 (runtime): expected key 'max_seq_len', found ['max_batch_size', "
            "'max_num_tokens']. Hint: add max_seq_len: ...",
            id="missing-runtime-key",
        ),
        pytest.param(
            "name: x\nlayers: [\n",
            "spec.yaml:3:1: not valid YAML (expected the node content, but found '<stream end>').",
            id="bad-yaml",
        ),
    ],
)
def test_spec_errors_name_the_place(text: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(text, source="spec.yaml")
    assert str(info.value) == message
