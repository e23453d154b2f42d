"""TensorRT-LLM's real test-db files load, validate and render unchanged (where: tests/ci_tool/testdb/corpus.py)."""

from __future__ import annotations

import pytest

from ci_tool.testdb.load import load_test_db, read_test_db_file, yaml_files
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.select import normalize_query, render
from ci_tool.testdb.waives import read_waives, waives_for_gpu
from tests.ci_tool.testdb.corpus import TEST_DB, WAIVES, needs_corpus

pytestmark = needs_corpus(TEST_DB)

# The facts a stage of each kind sends (stage-name keys over a probe of its runner), as in the reference CI.
A10_PRE_MERGE_PYTORCH = {
    "gpu": "A10",
    "system_gpu_count": "1",
    "stage": "pre_merge",
    "backend": "pytorch",
    "orchestrator": "mpi",
    "auto_trigger": "others",
    "linux_distribution_name": "ubuntu",
    "cpu": "x86_64",
    "supports_fp8": False,
}
DGX_B200_PERF_SANITY_POST_MERGE = {
    "gpu": "DGX_B200",
    "system_gpu_count": "8",
    "stage": "post_merge",
    "backend": "pytorch",
    "orchestrator": "mpi",
    "auto_trigger": "others",
}
CPU_PRE_MERGE = {
    "system_gpu_count": "0",
    "cpu": "x86_64",
    "linux_distribution_name": "ubuntu",
    "stage": "pre_merge",
    "backend": "generic",
    "orchestrator": "mpi",
    "auto_trigger": "others",
}
DGX_H100_4_GPUS_PYTORCH = {
    "gpu": "H100 80GB HBM3",
    "system_gpu_count": "4",
    "stage": "pre_merge",
    "backend": "pytorch",
    "orchestrator": "mpi",
    "auto_trigger": "others",
    "linux_distribution_name": "ubuntu",
    "cpu": "x86_64",
}


# file -> (context, blocks) of each context it defines, as the corpus holds them (the corpus is never edited)
CORPUS_FILES: dict[str, list[tuple[str, int]]] = {
    "l0_a10.yml": [("l0_a10", 6), ("l0_a10_pybind", 1)],
    "l0_a100.yml": [("l0_a100", 3)],
    "l0_a30.yml": [("l0_a30", 7)],
    "l0_b200.yml": [("l0_b200", 4)],
    "l0_b200_perf_sanity.yml": [("l0_b200_perf_sanity", 1)],
    "l0_cpu.yml": [("l0_cpu", 1)],
    "l0_dgx_b200.yml": [("l0_dgx_b200", 8)],
    "l0_dgx_b200_perf_sanity.yml": [("l0_dgx_b200_perf_sanity", 1)],
    "l0_dgx_h100.yml": [("l0_dgx_h100", 6)],
    "l0_dgx_h200.yml": [("l0_dgx_h200", 4)],
    "l0_gb200_multi_gpus.yml": [("l0_gb200_multi_gpus", 2)],
    "l0_gb200_multi_gpus_perf_sanity.yml": [("l0_gb200_multi_gpus_perf_sanity", 2)],
    "l0_h100.yml": [("l0_h100", 8)],
    "l0_l40s.yml": [("l0_l40s", 4)],
    "l0_rtx_pro_6000.yml": [("l0_rtx_pro_6000", 2)],
    "l0_sanity_check.yml": [("l0_sanity_check", 2)],
}


def test_the_corpus_holds_exactly_the_files_pinned_here() -> None:
    assert sorted(path.name for path in yaml_files(TEST_DB)) == sorted(CORPUS_FILES)


@pytest.mark.parametrize(("name", "expected"), CORPUS_FILES.items(), ids=CORPUS_FILES)
def test_every_corpus_file_loads_without_problems(name: str, expected: list[tuple[str, int]]) -> None:
    contexts, problems = read_test_db_file(TEST_DB / name)
    assert (problems, [(context.name, len(context.blocks)) for context in contexts]) == ([], expected)


@pytest.fixture(scope="module")
def corpus_db() -> TestDb:
    return load_test_db(TEST_DB)


# context -> lines rendered with no query (every block matches): what `check_test_list.py` renders
NO_QUERY_LINES = {
    "l0_a10": 169, "l0_a100": 28, "l0_a10_pybind": 3, "l0_a30": 151, "l0_b200": 91, "l0_b200_perf_sanity": 1,
    "l0_cpu": 175, "l0_dgx_b200": 225, "l0_dgx_b200_perf_sanity": 5, "l0_dgx_h100": 156, "l0_dgx_h200": 154,
    "l0_gb200_multi_gpus": 78, "l0_gb200_multi_gpus_perf_sanity": 14, "l0_h100": 277, "l0_l40s": 73,
    "l0_rtx_pro_6000": 74, "l0_sanity_check": 25,
}  # fmt: skip


def test_every_context_renders_all_its_lines_with_no_query(corpus_db: TestDb) -> None:
    rendered = {name: len(render(corpus_db, name, {})) for name in sorted(corpus_db.contexts)}
    assert rendered == NO_QUERY_LINES


def test_a10_pre_merge_pytorch_stage(corpus_db: TestDb) -> None:
    lines = render(corpus_db, "l0_a10", normalize_query(A10_PRE_MERGE_PYTORCH))
    ids = [line.test_id for line in lines]
    assert ids[0] == "unittest/_torch/sampler/test_torch_sampler.py"
    assert "test_e2e.py::test_openai_chat_example[pytorch]" in ids
    timeouts = {line.test_id: line.timeout_minutes for line in lines if line.timeout_minutes}
    assert timeouts["test_e2e.py::test_openai_chat_example[pytorch]"] == 90
    post_merge_only = render(corpus_db, "l0_a10", normalize_query({**A10_PRE_MERGE_PYTORCH, "stage": "post_merge"}))
    assert not set(ids) & {line.test_id for line in post_merge_only} - _no_stage_term_tests(corpus_db, "l0_a10")
    assert len(ids) == len(set(ids))


def _no_stage_term_tests(db: TestDb, context: str) -> set[str]:
    return {e.line.test_id for b in db.contexts[context].blocks if "stage" not in b.condition.terms for e in b.entries}


def test_a10_wildcard_also_matches_a100x(corpus_db: TestDb) -> None:
    """The reference's gotcha: `*a10*` matches A100X, which is why l0_a10 renders only on A10 stages."""
    a100x = normalize_query({**A10_PRE_MERGE_PYTORCH, "gpu": "A100X"})
    assert render(corpus_db, "l0_a10", a100x) == render(corpus_db, "l0_a10", normalize_query(A10_PRE_MERGE_PYTORCH))


def test_post_merge_dgx_b200_perf_sanity_stage(corpus_db: TestDb) -> None:
    lines = render(corpus_db, "l0_dgx_b200_perf_sanity", normalize_query(DGX_B200_PERF_SANITY_POST_MERGE))
    assert len(lines) == 5
    assert all(line.test_id.startswith("perf/test_perf_sanity.py::test_e2e[") for line in lines)
    pre_merge = normalize_query({**DGX_B200_PERF_SANITY_POST_MERGE, "stage": "pre_merge"})
    assert render(corpus_db, "l0_dgx_b200_perf_sanity", pre_merge, allow_empty=True) == []


def test_cpu_stage(corpus_db: TestDb) -> None:
    lines = render(corpus_db, "l0_cpu", normalize_query(CPU_PRE_MERGE))
    assert lines[0].test_id == "disaggregated/test_aiperf_gate.py::test_fires_on_error_storm"
    assert any(line.isolation for line in lines)


def test_dgx_h100_4_gpus_stage_filters_by_count_and_auto_trigger(corpus_db: TestDb) -> None:
    lines = render(corpus_db, "l0_dgx_h100", normalize_query(DGX_H100_4_GPUS_PYTORCH))
    ids = [line.test_id for line in lines]
    assert 'unittest/llmapi/test_llm_multi_gpu_pytorch.py -m "gpu4"' in ids
    assert not any("test_deepseek_streaming" in test_id for test_id in ids)  # auto_trigger: deepseek blocks
    deepseek = render(
        corpus_db, "l0_dgx_h100", normalize_query({**DGX_H100_4_GPUS_PYTORCH, "auto_trigger": "deepseek"})
    )
    assert any("test_deepseek_streaming" in line.test_id for line in deepseek)
    two_gpus = normalize_query({**DGX_H100_4_GPUS_PYTORCH, "system_gpu_count": "2"})
    assert set(ids).isdisjoint(line.test_id for line in render(corpus_db, "l0_dgx_h100", two_gpus, allow_empty=True))


def test_corpus_waives_parse() -> None:
    waives, problems = read_waives(WAIVES)
    assert problems == []
    assert len(waives) == 464  # 455 lines, one of them holding ten paths
    a10 = waives_for_gpu(waives, "A10")
    assert any(w.test_id == "unittest/kv_cache_manager_v2_tests/" and w.gpu == "A10" for w in a10)
    assert not any(w.gpu == "A100" for w in a10)
    assert all(w.gpu in (None, "A10") for w in a10)
