"""`ci-tool testdb check --catalog` on perf-sanity cases: each case rendered by a gated stage, each gated
family rendering a case, each case's config present. Real catalogs, test-db files and configs in tmp_path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ci_tool.cli import main

ROOT = Path(__file__).resolve().parents[3]
GEMMA = ROOT / "tests/scripts/perf-sanity/gemma_like.yaml"
CASE = "tests/perf/test_perf_sanity.py::test_e2e"
PERF_SANITY = "- {name: CPU-Generic-PerfSanity, platform: cpu, context: l0_p, splits: 1}\n"
FUNCTIONAL = "- {name: CPU-Generic, platform: cpu, context: l0_p, splits: 1}\n"


def check(capsys: pytest.CaptureFixture[str], root: Path, tests: str, families: str) -> tuple[int, list[str]]:
    """`testdb check` of one context `l0_p` (one block listing `tests`) against a catalog of `families`."""
    (root / "test-db").mkdir()
    (root / "test-db/l0_p.yml").write_text(f"version: 0.0.1\nl0_p:\n- tests:\n{tests}")
    configs = root / "tests/scripts/perf-sanity"
    configs.mkdir(parents=True)
    shutil.copy(GEMMA, configs / GEMMA.name)
    (root / "stages.yml").write_text("version: 1\nfamilies:\n" + families)
    code = main(["testdb", "check", "--test-db", str(root / "test-db"), "--catalog", str(root / "stages.yml")])
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).splitlines()


def test_a_case_a_perf_sanity_stage_renders_passes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, lines = check(capsys, tmp_path, f"  - {CASE}[cpu-gemma_like-pool4g-b80]\n", PERF_SANITY)
    assert (code, lines) == (0, ["test-db OK: 1 contexts, 1 test lines, 0 waives"])


@pytest.mark.parametrize(
    ("tests", "families", "error"),
    [
        (
            f"  - {CASE}[cpu-gemma_like-pool4g-b80]\n",
            FUNCTIONAL,
            "error: {db}:4:5 (l0_p[0].tests[0]): expected a PerfSanity or Perf stage to render perf case "
            "'cpu-gemma_like-pool4g-b80', found only CPU-Generic (functional: regressions are recorded, never "
            "gated) Hint: move it to a perf-sanity context (a -PerfSanity family renders it), or list files "
            "outside tests/perf/test_perf_sanity.py",
        ),
        (
            '  - tests/perf -m "not gpu"\n',
            FUNCTIONAL,
            "error: {db}:4:5 (l0_p[0].tests[0]): expected a PerfSanity or Perf stage to render the perf cases "
            "under 'tests/perf', found only CPU-Generic (functional: regressions are recorded, never gated) Hint: "
            "move it to a perf-sanity context (a -PerfSanity family renders it), or list files outside "
            "tests/perf/test_perf_sanity.py",
        ),
        (
            "  - tests/perf/test_seed_story.py\n",
            PERF_SANITY,
            "error: {catalog}:3:10 (families[0]): expected PerfSanity family 'CPU-Generic-PerfSanity' to render at "
            f"least one perf case ({CASE}[...]) from context 'l0_p', found none Hint: add a case line to a block "
            "of 'l0_p' this family renders, or drop the PerfSanity tag",
        ),
        (
            f"  - {CASE}[cpu-gema_like-pool4g-b80]\n",
            PERF_SANITY,
            "error: {db}:4:5 (l0_p[0].tests[0]): expected the config tests/scripts/perf-sanity/gema_like.yaml of "
            "perf case 'cpu-gema_like-pool4g-b80', found no such file Hint: did you mean 'gemma_like'?",
        ),
        (
            f"  - {CASE}[cpu-gemma_like-pool4g-b88]\n",
            PERF_SANITY,
            "error: {db}:4:5 (l0_p[0].tests[0]): expected a case of tests/scripts/perf-sanity/gemma_like.yaml, "
            "found 'cpu-gemma_like-pool4g-b88' Hint: did you mean 'cpu-gemma_like-pool4g-b80' or "
            "'gpu-gemma_like-pool4g-b80' or 'gpu-gemma_like-pool48g-b128_1k'?",
        ),
        (
            f"  - {CASE}[tpu-gemma_like-pool4g-b80]\n",
            PERF_SANITY,
            "error: {db}:4:5 (l0_p[0].tests[0]): expected a perf case id <mode>-<config>-<server>-<client>, found "
            "'tpu-gemma_like-pool4g-b80' Hint: mode is gpu or cpu, e.g. gpu-gemma_like-pool4g-b80",
        ),
    ],
    ids=["functional-only-case", "functional-only-folder", "gated-without-case", "config-missing", "case-missing",
         "not-a-case-id"],
)
def test_perf_placement_problems_are_located(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tests: str, families: str, error: str
) -> None:
    code, lines = check(capsys, tmp_path, tests, families)
    db, catalog = tmp_path / "test-db/l0_p.yml", tmp_path / "stages.yml"
    summary = "test-db check failed: 1 problem(s) in 1 contexts, 1 test lines, 0 waives"
    assert (code, lines) == (1, [error.format(db=db, catalog=catalog), summary])


def test_this_repository_passes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["testdb", "check", "--test-db", str(ROOT / "test-db"), "--catalog", str(ROOT / "jenkins/stages.yml")])
    assert code == 0, capsys.readouterr().err
