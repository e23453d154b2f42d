"""The stage-name grammar: real stage names of TensorRT-LLM's CI (REAL_STAGES) parse to their fields; bad names
get pinned messages."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ci_tool.errors import StageError, Where
from ci_tool.stages.modes import TestMode
from ci_tool.stages.names import StageKind, StageName, parse_family_name, parse_stage_name

TOPOLOGY = "CTX1-NODE1-GPU4-GEN1-NODE2-GPU8"
DISAGG = f"GB200-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-FUNCTIONAL-ONLY-{TOPOLOGY}-1"
DISAGG_TAGS = ["Disagg", "PerfSanity", "FUNCTIONAL-ONLY", *TOPOLOGY.split("-")]

F, P, S = "functional", "perf", "perf_sanity"
# name: (gpu, gpu_count, node_count, backend, tags, post_merge, shard, mode, functional_only)
REAL_STAGES: dict[str, tuple[object, ...]] = {
    "A10-PyTorch-1": ("A10", 1, 1, "pytorch", [], False, 1, F, False),
    "A30-AutoDeploy-1": ("A30", 1, 1, "autodeploy", [], False, 1, F, False),
    "A30-PyTorch-1": ("A30", 1, 1, "pytorch", [], False, 1, F, False),
    "A10-FMHA-Post-Merge-1": ("A10", 1, 1, "fmha", [], True, 1, F, False),
    "CPU-Generic-x86-1": ("CPU", 0, 1, "generic", ["x86"], False, 1, F, False),
    "DGX_B200-4_GPUs-Verl-Post-Merge-1": ("DGX_B200", 4, 1, "verl", [], True, 1, F, False),
    "DGX_B200-8_GPUs-PyTorch-1": ("DGX_B200", 8, 1, "pytorch", [], False, 1, F, False),
    "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3": ("DGX_B200", 8, 1, "pytorch", ["PerfSanity"], True, 3, S, False),
    "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-4": ("DGX_B200", 8, 1, "pytorch", ["PerfSanity"], True, 4, S, False),
    "DGX_B200-PyTorch-PerfSanity-1": ("DGX_B200", 1, 1, "pytorch", ["PerfSanity"], False, 1, S, False),
    "DGX_B200-PyTorch-PerfSanity-Post-Merge-1": ("DGX_B200", 1, 1, "pytorch", ["PerfSanity"], True, 1, S, False),
    "DGX_H100-PyTorch-1": ("DGX_H100", 1, 1, "pytorch", [], False, 1, F, False),
    "DGX_H100-4_GPUs-PyTorch-1": ("DGX_H100", 4, 1, "pytorch", [], False, 1, F, False),
    "DGX_H100-4_GPUs-PyTorch-DeepSeek-1": ("DGX_H100", 4, 1, "pytorch", ["DeepSeek"], False, 1, F, False),
    "GB200-4_GPUs-PyTorch-PerfSanity-1": ("GB200", 4, 1, "pytorch", ["PerfSanity"], False, 1, S, False),
    DISAGG: ("GB200", 8, 2, "pytorch", DISAGG_TAGS, False, 1, S, True),
    "H100_PCIe-PyTorch-Perf-1": ("H100_PCIe", 1, 1, "pytorch", ["Perf"], False, 1, P, False),
    "A10-TensorRT-[Post-Merge]-1": ("A10", 1, 1, "tensorrt", [], True, 1, F, False),
    "A100X-Triton-[Post-Merge]-1": ("A100X", 1, 1, "triton", [], True, 1, F, False),
    # non-test stages
    "CPU-Build_Docs": ("CPU", 0, 1, None, [], False, None, F, False),
    "A10-Build_Docs": ("A10", 1, 1, None, [], False, None, F, False),
    "CPU-AgentFlow-UnitTest": ("CPU", 0, 1, None, [], False, None, F, False),
    "B200_PCIe-PackageSanityCheck-PY312-DLFW": ("B200_PCIe", 1, 1, None, ["PY312", "DLFW"], False, None, F, False),
    "A10-PackageSanityCheck-PY310-UB2204": ("A10", 1, 1, None, ["PY310", "UB2204"], False, None, F, False),
    "GH200-PackageSanityCheck-PY312-UB2404": ("GH200", 1, 1, None, ["PY312", "UB2404"], False, None, F, False),
    "Build-Docker-Images": (None, 0, 1, None, [], False, None, F, False),
}
JSON_KEYS = [
    *("name", "gpu", "gpu_count", "node_count", "backend", "tags"),
    *("post_merge", "shard", "mode", "functional_only", "cbts", "attempt"),
]


@pytest.mark.parametrize(("name", "expected"), REAL_STAGES.items(), ids=list(REAL_STAGES))
def test_real_stage_names_parse(name: str, expected: tuple[object, ...]) -> None:
    assert parse_stage_name(name).to_json() == dict(zip(JSON_KEYS, (name, *expected, False, None), strict=True))


# name: (shard, cbts, attempt, family)
SUFFIXED = {
    "A10-PyTorch-1-cbts": (1, True, None, "A10-PyTorch"),
    "A10-PyTorch-12-cbts": (12, True, None, "A10-PyTorch"),
    "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3-attempt-2": (
        3,
        False,
        2,
        "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge",
    ),
    "A10-PyTorch-2-cbts-attempt-3": (2, True, 3, "A10-PyTorch"),
    "A10-PyTorch-cbts-1": (1, False, None, "A10-PyTorch-cbts"),  # a descriptive tag before the shard
}


@pytest.mark.parametrize(("name", "expected"), SUFFIXED.items(), ids=list(SUFFIXED))
def test_the_cbts_and_attempt_suffixes_follow_the_shard(name: str, expected: tuple[object, ...]) -> None:
    parsed = parse_stage_name(name)
    assert (parsed.shard, parsed.cbts, parsed.attempt, parsed.family) == expected


def test_a_narrowed_stage_gets_the_cbts_suffix() -> None:
    assert parse_stage_name("A10-PyTorch-2").with_cbts() == parse_stage_name("A10-PyTorch-2-cbts")


@pytest.mark.parametrize("name", ["A10-PyTorch-2", "A10-PyTorch-2-cbts"])
def test_a_stage_run_again_gets_the_attempt_suffix_and_knows_its_first_attempt(name: str) -> None:
    again = parse_stage_name(name).with_attempt(2)
    assert again == parse_stage_name(f"{name}-attempt-2")
    assert (again.first_attempt, parse_stage_name(name).first_attempt) == (name, name)


@pytest.mark.parametrize(("name", "attempt"), [("A10-PyTorch-2-attempt-2", 3), ("A10-PyTorch-2", 1)])
def test_an_attempt_is_added_once_and_from_2(name: str, attempt: int) -> None:
    with pytest.raises(StageError, match=r"expected a test stage without an attempt and an attempt of 2, 3, \.\.\."):
        parse_stage_name(name).with_attempt(attempt)


def _reference_stages() -> dict[str, tuple[int, int]]:
    """reference_stages.txt: stage name -> (GPUs, nodes) as the reference's configs say (the 7 non-test
    stages: what their GPU token says)."""
    stages: dict[str, tuple[int, int]] = {}
    for line in (Path(__file__).with_name("reference_stages.txt")).read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) == 1:
            stages[fields[0]] = (0 if fields[0].startswith("CPU-") else 1, 1)
            continue
        family, splits, _platform, gpus, nodes, _dispatch = fields
        stages.update({f"{family}-{k}": (int(gpus), int(nodes)) for k in range(1, int(splits) + 1)})
    return stages


REFERENCE_STAGES = _reference_stages()


def test_the_reference_pipeline_has_189_stage_names() -> None:
    assert (len(REFERENCE_STAGES), sum(parse_stage_name(n).is_test for n in REFERENCE_STAGES)) == (189, 182)


@pytest.mark.parametrize(("name", "counts"), REFERENCE_STAGES.items(), ids=list(REFERENCE_STAGES))
def test_every_reference_stage_name_parses_with_the_counts_its_config_gives(name: str, counts: tuple[int, int]) -> None:
    parsed = parse_stage_name(name)
    assert (parsed.gpu_count, parsed.node_count) == counts


REPEATED = "GB300-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-CTX1-NODE1-GPU4-GEN1-NODE1-GPU4-Post-Merge-1"


def test_topology_tokens_repeat_and_are_kept_in_the_tags() -> None:
    parsed = parse_stage_name(REPEATED)
    assert (parsed.tags, parsed.topology, parsed.selection_tags) == (
        ("Disagg", "PerfSanity", "CTX1", "NODE1", "GPU4", "GEN1", "NODE1", "GPU4"),
        "CTX1-NODE1-GPU4-GEN1-NODE1-GPU4",
        ("Disagg", "PerfSanity"),
    )


@pytest.mark.parametrize(
    ("name", "topology"),
    [
        (DISAGG, TOPOLOGY),
        ("GB200-8_GPUs-2_Nodes-PyTorch-PerfSanity-Node2-GPU8-Post-Merge-1", "Node2-GPU8"),
        ("A10-PyTorch-1", None),
    ],
    ids=["disagg", "node-gpu", "none"],
)
def test_topology_is_shown_joined(name: str, topology: str | None) -> None:
    assert parse_stage_name(name).topology == topology


def test_the_topology_never_changes_what_a_stage_selects() -> None:
    with_topology = parse_stage_name(REPEATED)
    without = parse_stage_name("GB300-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-Post-Merge-1")
    facts = ("gpu", "gpu_count", "node_count", "backend", "post_merge", "mode", "functional_only")
    assert [getattr(with_topology, f) for f in facts] == [getattr(without, f) for f in facts]
    assert (with_topology.orchestrator, with_topology.auto_trigger, with_topology.on_demand) == ("mpi", "others", False)
    assert with_topology.selection_tags == without.selection_tags


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("A10-PyTorch-1", StageKind.TEST),
        ("CPU-Build_Docs", StageKind.BUILD_DOCS),
        ("CPU-AgentFlow-UnitTest", StageKind.AGENT_FLOW),
        ("A10-PackageSanityCheck-PY310-UB2204", StageKind.PACKAGE_SANITY),
        ("Build-Docker-Images", StageKind.DOCKER_IMAGES),
    ],
    ids=lambda value: value if isinstance(value, str) else value.value,
)
def test_kind(name: str, kind: StageKind) -> None:
    assert parse_stage_name(name).kind is kind


# The mode rule that reviewers keep flagging: only the exact `Perf` tag is perf mode.
@pytest.mark.parametrize(
    ("name", "mode"),
    [
        ("H100_PCIe-PyTorch-Perf-1", TestMode.PERF),
        ("H100_PCIe-PyTorch-Perf-Post-Merge-1", TestMode.PERF),
        ("DGX_B200-PyTorch-PerfSanity-1", TestMode.PERF_SANITY),
        ("GB200-4_GPUs-PyTorch-PerfSanity-Post-Merge-1", TestMode.PERF_SANITY),
        (DISAGG, TestMode.PERF_SANITY),
        ("A10-PyTorch-Perfect-1", TestMode.FUNCTIONAL),
        ("A10-PyTorch-1", TestMode.FUNCTIONAL),
    ],
    ids=["perf", "perf-post-merge", "perf-sanity", "perf-sanity-post-merge", "disagg", "perf-substring", "plain"],
)
def test_mode_comes_from_the_exact_tag(name: str, mode: TestMode) -> None:
    assert parse_stage_name(name).mode is mode


@pytest.mark.parametrize(
    ("name", "multi_gpu", "orchestrator", "auto_trigger", "on_demand", "is_cpu"),
    [
        ("A10-PyTorch-1", False, "mpi", "others", False, False),
        ("DGX_H100-4_GPUs-PyTorch-DeepSeek-1", True, "mpi", "deepseek", False, False),
        ("DGX_H100-4_GPUs-PyTorch-GptOss-1", True, "mpi", "gpt_oss", False, False),
        ("DGX_H100-2_GPUs-PyTorch-Others-1", True, "mpi", "others", False, False),
        ("DGX_B200-4_GPUs-PyTorch-Ray-1", True, "ray", "others", False, False),
        ("GB200-2_Nodes-PyTorch-1", True, "mpi", "others", False, False),
        ("DGX_B200-PyTorch-OnDemand-1", False, "mpi", "others", True, False),
        ("CPU-Generic-x86-1", False, "mpi", "others", False, True),
    ],
    ids=["single", "deepseek", "gpt-oss", "others", "ray", "nodes", "on-demand", "cpu"],
)
def test_derived_facts(
    name: str, multi_gpu: bool, orchestrator: str, auto_trigger: str, on_demand: bool, is_cpu: bool
) -> None:
    stage = parse_stage_name(name)
    assert (stage.multi_gpu, stage.orchestrator, stage.auto_trigger, stage.on_demand, stage.is_cpu) == (
        multi_gpu,
        orchestrator,
        auto_trigger,
        on_demand,
        is_cpu,
    )


@pytest.mark.parametrize(
    ("name", "gpu_type"),
    [
        ("A10-PyTorch-1", "A10"),
        ("DGX_H100-4_GPUs-PyTorch-Post-Merge-1", "DGX_H100-4_GPUs"),
        ("GB200-8_GPUs-2_Nodes-PyTorch-1", "GB200-8_GPUs-2_Nodes"),
        ("CPU-Generic-2-cbts", "CPU"),
        ("CPU-Build_Docs", "CPU"),
        ("Build-Docker-Images", "CPU"),
    ],
    ids=["one-gpu", "gpus", "nodes", "cpu", "cpu-non-test", "no-gpu-token"],
)
def test_gpu_type_is_the_token_with_its_counts(name: str, gpu_type: str) -> None:
    assert parse_stage_name(name).gpu_type == gpu_type


def test_legacy_bracket_spelling_has_a_canonical_name_and_family() -> None:
    stage = parse_stage_name("A10-TensorRT-[Post-Merge]-1")
    assert (stage.canonical_name, stage.family) == ("A10-TensorRT-Post-Merge-1", "A10-TensorRT-[Post-Merge]")


@pytest.mark.parametrize(
    "family",
    ["A10-PyTorch", "DGX_H100-PyTorch", "GB200-4_GPUs-PyTorch", "GB200-4_GPUs-PyTorch-PerfSanity-Post-Merge"],
)
def test_families_parse_without_a_shard_and_expand(family: str) -> None:
    parsed = parse_family_name(family)
    assert (parsed.shard, parsed.family) == (None, family)
    expanded = parsed.with_shard(3)
    assert expanded == parse_stage_name(f"{family}-3")


BAD_NAMES = {
    "empty": ("", "expected a stage name, found '' Hint: stage names look like 'A10-PyTorch-1'"),
    "space": (
        "A10 PyTorch 1",
        "stage name 'A10 PyTorch 1' at column 4: expected only letters, digits, '_', '-', '+', '[' and ']', "
        "found ' ' Hint: remove markdown escapes and spaces from stage names",
    ),
    "markdown-escape": (
        "DGX\\_B200-PyTorch-1",
        "stage name 'DGX\\\\_B200-PyTorch-1' at column 4: expected only letters, digits, '_', '-', '+', '[' and ']', "
        "found '\\\\' Hint: remove markdown escapes and spaces from stage names",
    ),
    "double-dash": (
        "A10--PyTorch-1",
        "stage name 'A10--PyTorch-1' at column 5: expected a token between dashes, found an empty token "
        "Hint: remove the extra '-'",
    ),
    "lower-gpu": (
        "a10-PyTorch-1",
        "stage name 'a10-PyTorch-1' at column 1: expected a GPU token such as 'A10', 'DGX_H100' or 'CPU' first, "
        "found 'a10' Hint: GPU tokens start with a capital letter, e.g. 'A10'",
    ),
    "no-gpu": (
        "PyTorch-1",
        "stage name 'PyTorch-1' at column 1: expected a GPU token such as 'A10', 'DGX_H100' or 'CPU' first, "
        "found 'PyTorch' Hint: stage names start with the GPU, e.g. 'A10-PyTorch-1'",
    ),
    "backend-case": (
        "A10-Pytorch-1",
        "stage name 'A10-Pytorch-1' at column 5: expected a backend token (PyTorch, CPP, Triton, FMHA, TensorRT, "
        "AutoDeploy, Generic, Verl), found 'Pytorch' Hint: did you mean 'PyTorch'? tokens are case-sensitive",
    ),
    "backend-typo": (
        "A10-PyTroch-1",
        "stage name 'A10-PyTroch-1' at column 5: expected a backend token (PyTorch, CPP, Triton, FMHA, TensorRT, "
        "AutoDeploy, Generic, Verl), found 'PyTroch' Hint: did you mean 'PyTorch'?",
    ),
    "no-backend": (
        "A10-1",
        "stage name 'A10-1' at column 6: expected a backend token (PyTorch, CPP, Triton, FMHA, TensorRT, "
        "AutoDeploy, Generic, Verl), found the end of the name after 'A10' "
        "Hint: put the backend after the GPU and counts, e.g. 'A10-PyTorch-1'",
    ),
    "no-shard": (
        "A10-PyTorch",
        "stage name 'A10-PyTorch' at column 5: expected the shard index -<K> at the end, found 'PyTorch' "
        "Hint: stage names end in their shard index, e.g. 'A10-PyTorch-1'",
    ),
    "shard-zero": (
        "A10-PyTorch-0",
        "stage name 'A10-PyTorch-0' at column 13: expected a shard index 1, 2, ... without leading zeros, found '0'",
    ),
    "shard-leading-zero": (
        "A10-PyTorch-01",
        "stage name 'A10-PyTorch-01' at column 13: expected a shard index 1, 2, ... without leading zeros, found '01'",
    ),
    "shard-of-thousands-of-digits": (
        "A10-PyTorch-" + "1" * 5000,
        f"stage name {'A10-PyTorch-' + '1' * 5000!r} at column 13: expected a shard index of at most 6 digits, "
        "found '" + "1" * 30 + "'... (5000 characters)",
    ),
    "gpu-count-of-seven-digits": (
        "A10-1234567_GPUs-PyTorch-1",
        "stage name 'A10-1234567_GPUs-PyTorch-1' at column 5: expected a GPU count of at most 6 digits, "
        "found '1234567_GPUs'",
    ),
    "node-count-of-thousands-of-digits": (
        "GB200-4_GPUs-" + "2" * 5000 + "_Nodes-PyTorch-1",
        f"stage name {'GB200-4_GPUs-' + '2' * 5000 + '_Nodes-PyTorch-1'!r} at column 14: expected a node count of "
        "at most 6 digits, found '" + "2" * 30 + "'... (5006 characters)",
    ),
    "number-tag": (
        "A10-PyTorch-2-1",
        "stage name 'A10-PyTorch-2-1' at column 13: expected a tag, found the number '2' "
        "Hint: only the last token is the shard index",
    ),
    "perf-dash-sanity": (
        "DGX_B200-PyTorch-Perf-Sanity-Post-Merge-1",
        "stage name 'DGX_B200-PyTorch-Perf-Sanity-Post-Merge-1' at column 18: expected one mode tag, "
        "found 'Perf-Sanity' Hint: write 'PerfSanity' for a perf-sanity stage, or 'Perf' alone for perf mode",
    ),
    "perf-lower-case": (
        "H100_PCIe-PyTorch-perf-1",
        "stage name 'H100_PCIe-PyTorch-perf-1' at column 19: expected a tag, found 'perf' "
        "Hint: did you mean 'Perf'? tokens are case-sensitive",
    ),
    "perfsanity-case": (
        "GB200-4_GPUs-PyTorch-Perfsanity-1",
        "stage name 'GB200-4_GPUs-PyTorch-Perfsanity-1' at column 22: expected a tag, found 'Perfsanity' "
        "Hint: did you mean 'PerfSanity'? tokens are case-sensitive",
    ),
    "two-modes": (
        "A10-PyTorch-Perf-PerfSanity-1",
        "stage name 'A10-PyTorch-Perf-PerfSanity-1' at column 18: expected at most one mode tag (Perf, PerfSanity), "
        "found 'Perf' and 'PerfSanity'",
    ),
    "two-auto-triggers": (
        "DGX_H100-4_GPUs-PyTorch-DeepSeek-GptOss-1",
        "stage name 'DGX_H100-4_GPUs-PyTorch-DeepSeek-GptOss-1' at column 34: expected at most one auto-trigger "
        "tag (DeepSeek, GptOss, Others), found 'DeepSeek' and 'GptOss'",
    ),
    "functional-only-case": (
        "GB200-4_GPUs-PyTorch-PerfSanity-Functional-Only-1",
        "stage name 'GB200-4_GPUs-PyTorch-PerfSanity-Functional-Only-1' at column 33: expected a tag, "
        "found 'Functional-Only' Hint: did you mean 'FUNCTIONAL-ONLY'? tokens are case-sensitive",
    ),
    "post-merge-case": (
        "A10-PyTorch-post-merge-1",
        "stage name 'A10-PyTorch-post-merge-1' at column 13: expected a tag, found 'post-merge' "
        "Hint: did you mean 'Post-Merge'? tokens are case-sensitive",
    ),
    "post-merge-not-last": (
        "A10-PyTorch-Post-Merge-DeepSeek-1",
        "stage name 'A10-PyTorch-Post-Merge-DeepSeek-1' at column 13: expected a tag before Post-Merge, "
        "found 'Post-Merge' Hint: Post-Merge comes last, right before the shard index",
    ),
    "second-backend": (
        "A10-PyTorch-CPP-1",
        "stage name 'A10-PyTorch-CPP-1' at column 13: expected one backend token, found a second one, 'CPP'",
    ),
    "duplicate-tag": (
        "A10-PyTorch-Ray-Ray-1",
        "stage name 'A10-PyTorch-Ray-Ray-1' at column 17: expected each tag once, found 'Ray' twice",
    ),
    "gpus-after-backend": (
        "DGX_H100-PyTorch-4_GPUs-1",
        "stage name 'DGX_H100-PyTorch-4_GPUs-1' at column 18: expected a tag, found '4_GPUs' "
        "Hint: the GPU count comes right after the GPU token and is spelled 4_GPUs",
    ),
    "gpus-lower-case": (
        "DGX_H100-4_gpus-PyTorch-1",
        "stage name 'DGX_H100-4_gpus-PyTorch-1' at column 10: expected a backend token (PyTorch, CPP, Triton, FMHA, "
        "TensorRT, AutoDeploy, Generic, Verl), found '4_gpus' "
        "Hint: the GPU count comes right after the GPU token and is spelled 4_GPUs",
    ),
    "nodes-before-gpus": (
        "GB200-2_Nodes-8_GPUs-PyTorch-1",
        "stage name 'GB200-2_Nodes-8_GPUs-PyTorch-1' at column 15: expected a backend token (PyTorch, CPP, Triton, "
        "FMHA, TensorRT, AutoDeploy, Generic, Verl), found '8_GPUs' "
        "Hint: the GPU count comes right after the GPU token and is spelled 8_GPUs",
    ),
    "zero-gpus": (
        "DGX_H100-0_GPUs-PyTorch-1",
        "stage name 'DGX_H100-0_GPUs-PyTorch-1' at column 10: expected a GPU count of at least 1, found '0_GPUs'",
    ),
    "cpu-with-gpus": (
        "CPU-2_GPUs-Generic-1",
        "stage name 'CPU-2_GPUs-Generic-1' at column 5: expected no GPU count on a CPU stage, found '2_GPUs'",
    ),
    "stray-bracket": (
        "A10-TensorRT-[Post-1",
        "stage name 'A10-TensorRT-[Post-1' at column 14: expected a tag of letters, digits, '_' and '+', "
        "found '[Post' Hint: brackets appear only in the legacy spelling [Post-Merge]",
    ),
    "package-sanity-without-key": (
        "A10-PackageSanityCheck",
        "stage name 'A10-PackageSanityCheck' at column 5: expected the shard index -<K> at the end, "
        "found 'PackageSanityCheck' Hint: PackageSanityCheck stages are written like "
        "'A10-PackageSanityCheck-PY310-UB2204'",
    ),
    "cbts-without-shard": (
        "A10-PyTorch-cbts",
        "stage name 'A10-PyTorch-cbts' at column 12: expected the shard index -<K> before the suffix, found "
        "'PyTorch' Hint: the suffixes follow the shard index, e.g. 'A10-PyTorch-1-cbts'",
    ),
    "cbts-twice": (
        "A10-PyTorch-1-cbts-cbts",
        "stage name 'A10-PyTorch-1-cbts-cbts' at column 19: expected the shard index -<K> before the suffix, found "
        "'cbts' Hint: the suffixes follow the shard index, e.g. 'A10-PyTorch-1-cbts'",
    ),
    "first-attempt": (
        "A10-PyTorch-1-attempt-1",
        "stage name 'A10-PyTorch-1-attempt-1' at column 23: expected an attempt of 2, 3, ... without leading "
        "zeros, found '1'",
    ),
    "attempt-with-leading-zero": (
        "A10-PyTorch-1-attempt-02",
        "stage name 'A10-PyTorch-1-attempt-02' at column 23: expected an attempt of 2, 3, ... without leading "
        "zeros, found '02'",
    ),
    "build-docs-with-shard": (
        "CPU-Build_Docs-1",
        "stage name 'CPU-Build_Docs-1' at column 5: expected a backend token (PyTorch, CPP, Triton, FMHA, TensorRT, "
        "AutoDeploy, Generic, Verl), found 'Build_Docs' Hint: Build_Docs stages are written like 'CPU-Build_Docs'",
    ),
}


@pytest.mark.parametrize(("name", "message"), BAD_NAMES.values(), ids=list(BAD_NAMES))
def test_bad_names_give_one_line_errors(name: str, message: str) -> None:
    with pytest.raises(StageError) as caught:
        parse_stage_name(name)
    assert str(caught.value) == message


def test_an_error_carries_where_the_name_was_written() -> None:
    with pytest.raises(StageError) as caught:
        parse_stage_name("A10-PyTorch", where=Where("jenkins/stages.yml", 12, 9, "families[3].name"))
    assert str(caught.value).startswith(
        "jenkins/stages.yml:12:9 (families[3].name): stage name 'A10-PyTorch' at column 5: expected the shard index"
    )


BAD_FAMILIES = {
    "has-shard": (
        "A10-PyTorch-1",
        "stage name 'A10-PyTorch-1' at column 13: expected a family name without a shard index, found '1' "
        "Hint: write the family as 'A10-PyTorch'; its stages get -1, -2, ...",
    ),
    "no-backend": (
        "A10",
        "stage name 'A10' at column 4: expected a backend token (PyTorch, CPP, Triton, FMHA, TensorRT, AutoDeploy, "
        "Generic, Verl), found the end of the name after 'A10' "
        "Hint: put the backend after the GPU and counts, e.g. 'A10-PyTorch-1'",
    ),
}


@pytest.mark.parametrize(("name", "message"), BAD_FAMILIES.values(), ids=list(BAD_FAMILIES))
def test_bad_family_names(name: str, message: str) -> None:
    with pytest.raises(StageError) as caught:
        parse_family_name(name)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("family", "shard", "message"),
    [
        ("A10-PyTorch", 0, "expected a shard index of at least 1 for family 'A10-PyTorch', found 0"),
        ("CPU-Build_Docs", 1, "expected a test family name to add a shard index to, found 'CPU-Build_Docs'"),
    ],
    ids=["zero", "non-test"],
)
def test_with_shard_rejects(family: str, shard: int, message: str) -> None:
    with pytest.raises(StageError) as caught:
        parse_family_name(family).with_shard(shard)
    assert str(caught.value) == message


def test_a_stage_name_is_not_a_family_to_expand() -> None:
    with pytest.raises(StageError, match="expected a test family name"):
        parse_stage_name("A10-PyTorch-1").with_shard(2)


TOKENS = st.sampled_from(
    ["A10", "DGX_H100", "CPU", "PyTorch", "CPP", "4_GPUs", "2_Nodes", "Perf", "PerfSanity", "Post", "Merge",
     "FUNCTIONAL", "ONLY", "DeepSeek", "Ray", "[Post", "Merge]", "1", "12", "x86", "", "perf", "Build_Docs",
     "1" * 5000, "9" * 4301 + "_GPUs", "0000001", "1234567_Nodes"]
)  # fmt: skip


@given(st.lists(TOKENS, min_size=1, max_size=8).map("-".join))
def test_any_dashed_tokens_parse_or_raise_our_error(name: str) -> None:
    try:
        parsed = parse_stage_name(name)
    except StageError:
        return
    assert isinstance(parsed, StageName)
    assert parsed.name == name


@given(st.text(max_size=40))
def test_any_text_parses_or_raises_our_error(name: str) -> None:
    with contextlib.suppress(StageError):
        parse_stage_name(name)
