"""The GPU type perf results and baselines are kept under, from the name sysinfo reads off the device."""

from __future__ import annotations

import pytest

from ci_tool.perf.devices import peak_memory_bytes_per_s, perf_gpu_type


@pytest.mark.parametrize(
    ("sysinfo_name", "kept_under"),
    [
        ("H100 80GB HBM3", "H100"),  # what an H100 SXM reports: its baselines are H100.yaml
        ("H100 SXM5 80GB", "H100"),
        ("H200", "H200"),
        ("H100 PCIE", "H100 PCIE"),  # another part, with another peak: a file of its own
        ("H100 NVL", "H100 NVL"),
        ("A10", "A10"),
        ("B200", "B200"),
    ],
)
def test_memory_and_form_factor_words_are_not_part_of_the_type(sysinfo_name: str, kept_under: str) -> None:
    assert perf_gpu_type(sysinfo_name) == kept_under


def test_the_type_an_h100_is_kept_under_has_the_h100_peak() -> None:
    assert peak_memory_bytes_per_s(perf_gpu_type("H100 80GB HBM3")) == 3.35e12
    assert peak_memory_bytes_per_s(perf_gpu_type("H100 PCIE")) == 2.0e12
