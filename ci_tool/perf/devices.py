"""Peak memory bandwidth per GPU type (vendor datasheets, bytes/s): the denominator of `bandwidth_fraction`."""

from __future__ import annotations

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
