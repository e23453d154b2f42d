"""Peak memory bandwidth per GPU type (vendor datasheets, bytes/s): the denominator of `bandwidth_fraction`."""

from __future__ import annotations

import re

# Words of a GPU's marketing name that describe its memory or form factor, not the chip: `H100 80GB HBM3` is
# the H100 (SXM) whose baselines live in H100.yaml; `H100 PCIE` and `H100 NVL` keep their words (other parts).
_MEMORY_WORDS = re.compile(r"\d+GB|HBM\w*|SXM\d*")

PEAK_MEMORY_BYTES_PER_S: dict[str, float] = {
    "H200": 4.8e12,  # 141 GB HBM3e
    "H100": 3.35e12,  # SXM, 80 GB HBM3
    "H100_PCIE": 2.0e12,
    "B200": 8.0e12,
    "GB200": 8.0e12,
    "A100": 2.0e12,
    "A10": 0.6e12,
}


def peak_memory_bytes_per_s(gpu: str) -> float | None:
    """The peak of a sysinfo GPU type (`H200`, `H100 PCIE`, `DGX_B200`); None when unknown."""
    key = gpu.upper().replace(" ", "_").removeprefix("DGX_")
    if key in PEAK_MEMORY_BYTES_PER_S:
        return PEAK_MEMORY_BYTES_PER_S[key]
    head = key.split("_", 1)[0]
    return PEAK_MEMORY_BYTES_PER_S.get(head)


def perf_gpu_type(gpu: str) -> str:
    """The GPU type perf results and baselines are kept under: sysinfo's name less its memory and SXM words
    (`H100 80GB HBM3` -> `H100`, `H200` -> `H200`, `H100 PCIE` unchanged)."""
    words = [word for word in gpu.split() if not _MEMORY_WORDS.fullmatch(word.upper())]
    return " ".join(words) or gpu
