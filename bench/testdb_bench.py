"""Load + validate the TensorRT-LLM corpus test-db, then render every context for 20 system profiles.

Run: .venv/bin/python bench/testdb_bench.py [--test-db DIR] [--repeat N]
Prints the best-of-N load time and the per-render time (mean and worst over all context x profile renders).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from pathlib import Path

from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.select import normalize_query, render

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "trtllm" / "test-db"

GPUS = [
    ("A10", 1),
    ("A100X", 1),
    ("L40S", 1),
    ("H100 PCIE", 1),
    ("H100 80GB HBM3", 4),
    ("H200", 8),
    ("B200", 1),
    ("B200", 8),
    ("GB200", 4),
    (None, 0),
]
STAGES = ["pre_merge", "post_merge"]


def profiles() -> list[dict[str, object]]:
    """20 system profiles: 10 runner kinds x pre/post-merge, with the facts a stage sends."""
    result = []
    for (gpu, count), stage in itertools.product(GPUS, STAGES):
        result.append(
            {
                "gpu": gpu,
                "system_gpu_count": str(count),
                "stage": stage,
                "backend": "generic" if gpu is None else "pytorch",
                "orchestrator": "mpi",
                "auto_trigger": "others",
                "linux_distribution_name": "ubuntu",
                "cpu": "x86_64",
            }
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--test-db", type=Path, default=CORPUS)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    load_seconds = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        db = load_test_db(args.test_db)
        load_seconds.append(time.perf_counter() - started)

    queries = [normalize_query(p) for p in profiles()]
    render_seconds = []
    lines = 0
    for context, query in itertools.product(sorted(db.contexts), queries):
        started = time.perf_counter()
        rendered = render(db, context, query, allow_empty=True)
        render_seconds.append(time.perf_counter() - started)
        lines += len(rendered)

    tests = sum(len(b.entries) for c in db.contexts.values() for b in c.blocks)
    print(f"corpus: {args.test_db} ({len(db.contexts)} contexts, {tests} test lines)")
    print(
        f"load + validate: best {min(load_seconds) * 1e3:.1f} ms, median {statistics.median(load_seconds) * 1e3:.1f} ms"
        f" over {args.repeat} runs (goal < 300 ms)"
    )
    print(f"renders: {len(render_seconds)} ({len(db.contexts)} contexts x {len(queries)} profiles), {lines} lines")
    print(
        f"one render: mean {statistics.mean(render_seconds) * 1e3:.3f} ms, "
        f"worst {max(render_seconds) * 1e3:.3f} ms (goal < 5 ms)"
    )


if __name__ == "__main__":
    main()
