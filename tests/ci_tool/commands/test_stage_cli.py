"""`ci-tool stage parse` through the real entry point: JSON shapes and exit codes."""

from __future__ import annotations

import json

import pytest

from ci_tool.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


A10 = {
    "name": "A10-PyTorch-1",
    "gpu": "A10",
    "gpu_count": 1,
    "node_count": 1,
    "backend": "pytorch",
    "tags": [],
    "post_merge": False,
    "shard": 1,
    "mode": "functional",
    "functional_only": False,
    "cbts": False,
    "attempt": None,
}
PERF_SANITY = {
    "name": "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3",
    "gpu": "DGX_B200",
    "gpu_count": 8,
    "node_count": 1,
    "backend": "pytorch",
    "tags": ["PerfSanity"],
    "post_merge": True,
    "shard": 3,
    "mode": "perf_sanity",
    "functional_only": False,
    "cbts": False,
    "attempt": None,
}
DOCS = {
    "name": "CPU-Build_Docs",
    "gpu": "CPU",
    "gpu_count": 0,
    "node_count": 1,
    "backend": None,
    "tags": [],
    "post_merge": False,
    "shard": None,
    "mode": "functional",
    "functional_only": False,
    "cbts": False,
    "attempt": None,
}


def test_one_name_prints_one_object_with_exactly_the_documented_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "stage", "parse", "A10-PyTorch-1", "--json")
    assert (code, err) == (0, "")
    parsed = json.loads(out)
    assert (list(parsed), parsed) == (list(A10), A10)


def test_several_names_print_an_array_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "stage",
        "parse",
        "--json",
        "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3",
        "A10-PyTorch-1",
        "CPU-Build_Docs",
    )
    assert (code, json.loads(out)) == (0, [PERF_SANITY, A10, DOCS])


def test_text_output_is_one_line_per_name(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "stage", "parse", "A10-PyTorch-1", "GB200-8_GPUs-2_Nodes-PyTorch-PerfSanity-FUNCTIONAL-ONLY-1"
    )
    assert code == 0
    assert out.splitlines() == [
        "A10-PyTorch-1: test stage, gpu A10 x1, 1 node, backend pytorch, pre-merge, shard 1, mode functional",
        "GB200-8_GPUs-2_Nodes-PyTorch-PerfSanity-FUNCTIONAL-ONLY-1: test stage, gpu GB200 x8, 2 nodes, "
        "backend pytorch, tags PerfSanity FUNCTIONAL-ONLY, pre-merge, shard 1, "
        "mode perf_sanity (functional-only: perf never fails it), runs alone on its host",
    ]


def test_text_output_shows_a_topology_apart_from_the_tags(capsys: pytest.CaptureFixture[str]) -> None:
    name = "GB200-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-CTX1-NODE1-GPU1-GEN1-NODE1-GPU4-Post-Merge-1"
    code, out, _ = run(capsys, "stage", "parse", name)
    assert (code, out) == (
        0,
        f"{name}: test stage, gpu GB200 x8, 2 nodes, backend pytorch, tags Disagg PerfSanity, "
        "topology CTX1-NODE1-GPU1-GEN1-NODE1-GPU4 (descriptive), post-merge, shard 1, mode perf_sanity, "
        "runs alone on its host\n",
    )


BAD_BACKEND = (
    "error: stage name 'A10-Pytorch-1' at column 5: expected a backend token (PyTorch, CPP, Triton, FMHA, "
    "TensorRT, AutoDeploy, Generic, Verl), found 'Pytorch' Hint: did you mean 'PyTorch'? tokens are "
    "case-sensitive\n"
)


def test_every_name_is_parsed_the_good_ones_printed_every_bad_one_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "stage", "parse", "A10-Pytorch-1", "A10-PyTorch-1", "H100-", "CPU-Generic-2")
    assert (code, out.splitlines()) == (1, [
        "A10-PyTorch-1: test stage, gpu A10 x1, 1 node, backend pytorch, pre-merge, shard 1, mode functional",
        "CPU-Generic-2: test stage, gpu CPU x0, 1 node, backend generic, pre-merge, shard 2, mode functional",
    ])  # fmt: skip
    assert err.startswith(BAD_BACKEND) and err.count("error: ") == 2
    assert err.splitlines()[1].startswith("error: stage name 'H100-' at column 6: ")


def test_an_unparseable_name_is_a_one_line_error_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "stage", "parse", "A10-PyTorch-1", "A10-Pytorch-1", "--json")
    assert (code, json.loads(out)) == (1, [A10])  # the good one is printed all the same
    assert err == (
        "error: stage name 'A10-Pytorch-1' at column 5: expected a backend token (PyTorch, CPP, Triton, FMHA, "
        "TensorRT, AutoDeploy, Generic, Verl), found 'Pytorch' Hint: did you mean 'PyTorch'? tokens are "
        "case-sensitive\n"
    )


def test_no_name_is_a_usage_error_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "stage", "parse", "--json")
    assert code == 2
    assert "Missing argument 'NAMES...'" in err
