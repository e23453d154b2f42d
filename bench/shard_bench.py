"""Sharding benchmark: least_duration (pytest-split) against our default, on real lists and durations.

For each real stage below, render its list from the corpus test-db with the stage's own query (as CI
does for sbatch stages: stage-name facts, no sysinfo), then split it into 2..16 shards with both
algorithms and print makespan / lower bound, where lower bound = max(total / shards, longest test)
(no split can beat it). A second summary does the same for every test of each context.

    .venv/bin/python bench/shard_bench.py [--corpus ../shared/corpus/trtllm]

Exit status 1 if our default is worse than least_duration on any case.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from ci_tool.stages.durations import load_durations
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.query import render_query
from ci_tool.stages.shard import DEFAULT_ALGORITHM, plan_shards
from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.select import normalize_query, render

# (stage name, test-db context, architecture, gpu the pool reports when it differs from the token)
CASES: tuple[tuple[str, str, str, str | None], ...] = (
    ("A10-PyTorch-1", "l0_a10", "x86_64", None),
    ("A10-CPP-1", "l0_a10", "x86_64", None),
    ("A10-TensorRT-1", "l0_a10", "x86_64", None),
    ("A10-TensorRT-Post-Merge-1", "l0_a10", "x86_64", None),
    ("A100X-PyTorch-1", "l0_a100", "x86_64", None),
    ("A30-PyTorch-1", "l0_a30", "x86_64", None),
    ("A30-CPP-1", "l0_a30", "x86_64", None),
    ("A30-TensorRT-Post-Merge-1", "l0_a30", "x86_64", None),
    ("A30-Triton-Post-Merge-1", "l0_a30", "x86_64", None),
    ("B200_PCIe-PyTorch-1", "l0_b200", "x86_64", "B100"),
    ("B200_PCIe-PyTorch-Post-Merge-1", "l0_b200", "x86_64", "B100"),
    ("B200_PCIe-TensorRT-Post-Merge-1", "l0_b200", "x86_64", "B100"),
    ("CPU-Generic-x86-1", "l0_cpu", "x86_64", None),
    ("DGX_B200-2_GPUs-PyTorch-1", "l0_dgx_b200", "x86_64", None),
    ("DGX_B200-4_GPUs-PyTorch-1", "l0_dgx_b200", "x86_64", None),
    ("DGX_B200-4_GPUs-PyTorch-Ray-1", "l0_dgx_b200", "x86_64", None),
    ("DGX_B200-8_GPUs-PyTorch-1", "l0_dgx_b200", "x86_64", None),
    ("DGX_B200-4_GPUs-PyTorch-Post-Merge-1", "l0_dgx_b200", "x86_64", None),
    ("DGX_B200-8_GPUs-PyTorch-Post-Merge-1", "l0_dgx_b200", "x86_64", None),
    ("DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-1", "l0_dgx_b200_perf_sanity", "x86_64", None),
    ("DGX_H100-2_GPUs-PyTorch-Others-1", "l0_dgx_h100", "x86_64", None),
    ("DGX_H100-4_GPUs-PyTorch-Others-1", "l0_dgx_h100", "x86_64", None),
    ("DGX_H100-4_GPUs-PyTorch-DeepSeek-1", "l0_dgx_h100", "x86_64", None),
    ("DGX_H100-4_GPUs-PyTorch-GptOss-1", "l0_dgx_h100", "x86_64", None),
    ("DGX_H100-4_GPUs-CPP-1", "l0_dgx_h100", "x86_64", None),
    ("DGX_H100-2_GPUs-PyTorch-Ray-1", "l0_dgx_h100", "x86_64", None),
    ("DGX_H200-4_GPUs-PyTorch-Post-Merge-1", "l0_dgx_h200", "x86_64", None),
    ("DGX_H200-8_GPUs-PyTorch-Post-Merge-1", "l0_dgx_h200", "x86_64", None),
    ("DGX_H200-4_GPUs-TensorRT-Post-Merge-1", "l0_dgx_h200", "x86_64", None),
    ("GB200-4_GPUs-PyTorch-1", "l0_gb200_multi_gpus", "aarch64", None),
    ("GB200-4_GPUs-PyTorch-Post-Merge-1", "l0_gb200_multi_gpus", "aarch64", None),
    ("GB200-4_GPUs-PyTorch-PerfSanity-1", "l0_gb200_multi_gpus_perf_sanity", "aarch64", None),
    ("GB200-4_GPUs-PyTorch-PerfSanity-Post-Merge-1", "l0_gb200_multi_gpus_perf_sanity", "aarch64", None),
    ("H100_PCIe-PyTorch-1", "l0_h100", "x86_64", None),
    ("H100_PCIe-PyTorch-Ray-1", "l0_h100", "x86_64", None),
    ("H100_PCIe-CPP-1", "l0_h100", "x86_64", None),
    ("H100_PCIe-TensorRT-1", "l0_h100", "x86_64", None),
    ("H100_PCIe-PyTorch-Post-Merge-1", "l0_h100", "x86_64", None),
    ("H100_PCIe-TensorRT-Post-Merge-1", "l0_h100", "x86_64", None),
    ("L40S-PyTorch-1", "l0_l40s", "x86_64", None),
    ("L40S-TensorRT-Post-Merge-1", "l0_l40s", "x86_64", None),
    ("RTXPro6000D-PyTorch-Post-Merge-1", "l0_rtx_pro_6000", "x86_64", None),
    ("RTXPro6000D-4_GPUs-PyTorch-Post-Merge-1", "l0_rtx_pro_6000", "x86_64", None),
)
SHARD_COUNTS = range(2, 17)


Row = tuple[str, int, int, float, float]  # case, tests, shards, least_duration ratio, our ratio


def compare(
    case: str, test_ids: list[str], isolated: list[str], durations: dict[str, float]
) -> tuple[list[Row], float]:
    """Both algorithms on one list for every shard count; the rows and our planning seconds."""
    rows: list[Row] = []
    seconds = 0.0
    for splits in SHARD_COUNTS:
        if splits > len(test_ids):
            break
        lpt = plan_shards(test_ids, durations, splits=splits, algorithm="least_duration", isolated=isolated)
        started = time.perf_counter()
        ours = plan_shards(test_ids, durations, splits=splits, isolated=isolated)
        seconds += time.perf_counter() - started
        bound = ours.lower_bound_seconds
        rows.append((case, len(test_ids), splits, lpt.makespan_seconds / bound, ours.makespan_seconds / bound))
    return rows, seconds


def summary(title: str, rows: list[Row], seconds: float) -> list[str]:
    lpt = [row[3] for row in rows]
    ours = [row[4] for row in rows]
    worse = sum(1 for row in rows if row[4] > row[3] * (1 + 1e-12))
    better = sum(1 for row in rows if row[4] < row[3] * (1 - 1e-12))
    return [
        f"{title}: {len(rows)} cases",
        f"  median ratio  least_duration {statistics.median(lpt):.5f}  "
        f"{DEFAULT_ALGORITHM} {statistics.median(ours):.5f}",
        f"  max ratio     least_duration {max(lpt):.5f}  {DEFAULT_ALGORITHM} {max(ours):.5f}",
        f"  {DEFAULT_ALGORITHM} better on {better} cases, worse on {worse}; "
        f"planning {seconds * 1000:.0f} ms for all {len(rows)} plans",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    default_corpus = Path(__file__).resolve().parents[1] / ".." / "shared" / "corpus" / "trtllm"
    parser.add_argument("--corpus", type=Path, default=default_corpus)
    args = parser.parse_args()
    db = load_test_db(args.corpus / "test-db")
    durations = load_durations(args.corpus / "test_durations.json")

    stage_rows: list[Row] = []
    stage_seconds = 0.0
    for name, context, arch, gpu in CASES:
        query = normalize_query(render_query(parse_stage_name(name), None, arch=arch, gpu=gpu))
        lines = render(db, context, query)
        rows, seconds = compare(
            name, [line.test_id for line in lines], [line.test_id for line in lines if line.isolation], durations
        )
        stage_rows += rows
        stage_seconds += seconds

    context_rows: list[Row] = []
    context_seconds = 0.0
    for context in sorted(db.contexts):
        lines = list({line.test_id: line for line in render(db, context, {})}.values())  # every test of the context
        rows, seconds = compare(
            context, [line.test_id for line in lines], [line.test_id for line in lines if line.isolation], durations
        )
        context_rows += rows
        context_seconds += seconds

    print(f"{'case':<50} {'tests':>5} {'shards':>6} {'least_duration':>14} {DEFAULT_ALGORITHM:>12}")
    for case, tests, splits, lpt_ratio, our_ratio in stage_rows:
        print(f"{case:<50} {tests:>5} {splits:>6} {lpt_ratio:>14.5f} {our_ratio:>12.5f}")
    print()
    print("ratio = makespan / max(total / shards, longest test)")
    for line in summary(f"stages ({len(CASES)} real stage queries x 2..16 shards)", stage_rows, stage_seconds):
        print(line)
    title = f"whole contexts ({len(db.contexts)} contexts, every test, x 2..16 shards)"
    for line in summary(title, context_rows, context_seconds):
        print(line)
    worse = [row for row in stage_rows + context_rows if row[4] > row[3] * (1 + 1e-12)]
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
