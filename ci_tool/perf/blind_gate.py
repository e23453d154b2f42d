"""Whether a perf-sanity stage's gate can fail on throughput: a stage name and the GPU types with a throughput
baseline in, one line out (pure); `throughput_baselined` reads the baseline folder for the callers.

A PerfSanity stage on a GPU type without a baseline file (DGX_B200 while only H200.yaml exists) gets only
`no_baseline` verdicts for its gated metrics: its gate (fail or warn) can never act on them, and only lost
CUDA-graph coverage fails it. Plans (`ci-tool stage show`, `ci-tool bot plan`) say so, instead of letting the
stage pass silently; the run's report says it too (report_lines.py).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ci_tool.errors import PerfError
from ci_tool.perf.baselines import BASELINE_DIR, baseline_file, load_baselines
from ci_tool.stages.modes import PerfGate, TestMode
from ci_tool.stages.names import StageName

THROUGHPUT = "decode_tokens_per_s"


def baseline_gpu(stage: StageName) -> str:
    """The GPU type its baselines are kept under, as sysinfo names it: `DGX_B200` -> `B200`."""
    return (stage.gpu or "").removeprefix("DGX_")


def throughput_baselined(folder: Path) -> frozenset[str]:
    """The GPU types whose baseline file in `folder` holds a throughput baseline; a damaged file counts (its
    cases fail when they load it: the gate is not blind)."""
    found = set()
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else ():
        try:
            if any(name == THROUGHPUT for _, name in load_baselines(folder, path.stem)):
                found.add(path.stem)
        except PerfError:
            found.add(path.stem)
    return frozenset(found)


def blind_gate_line(stage: StageName, baselined: Collection[str]) -> str:
    """One line when `stage` is a GPU perf-sanity stage whose gate cannot fail on throughput (its GPU type is
    not in `baselined`); "" otherwise (not perf sanity, no gate, a CPU stage, or a throughput baseline)."""
    if stage.mode is not TestMode.PERF_SANITY or stage.policy.perf_gate is PerfGate.NONE or stage.is_cpu:
        return ""
    gpu = baseline_gpu(stage)
    if baseline_file(Path(), gpu).stem in baselined:
        return ""
    return (f"perf gate {stage.policy.perf_gate.value} cannot fail on throughput: no baseline for {gpu} (no "
            f"{THROUGHPUT} in {baseline_file(BASELINE_DIR, gpu)}); only lost CUDA-graph coverage fails it")  # fmt: skip
