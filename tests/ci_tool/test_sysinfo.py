"""The machine probe: name normalisation, capability-derived facts, and a probe that never crashes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool import sysinfo
from ci_tool.errors import SysinfoError


@pytest.mark.parametrize(
    ("nvml_name", "short"),
    [
        ("NVIDIA H100 PCIe", "H100 PCIE"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA GeForce RTX 5090", "RTX 5090"),
        ("NVIDIA B200", "B200"),
        ("", "na"),
    ],
    ids=["h100 pcie", "h200", "a10", "geforce", "b200", "empty"],
)
def test_gpu_names_drop_the_vendor_and_are_upper_case(nvml_name: str, short: str) -> None:
    assert sysinfo._short_gpu_name(nvml_name) == short


@pytest.mark.parametrize(
    ("capability", "fp8", "int8", "tf32"),
    [
        (9.0, True, True, True),
        (8.6, False, True, True),
        (8.9, True, True, True),
        (7.0, False, True, False),
        ("na", "na", "na", "na"),
    ],
    ids=["hopper", "ampere a10", "ada", "volta", "unknown"],
)
def test_support_flags_follow_compute_capability(
    capability: float | str, fp8: object, int8: object, tf32: object
) -> None:
    facts = sysinfo._gpu_facts("X", 1, 1024, capability)
    assert (facts["supports_fp8"], facts["supports_int8"], facts["supports_tf32"]) == (fp8, int8, tf32)


def test_probe_reports_every_key_and_is_json() -> None:
    facts = sysinfo.probe()
    json.dumps(facts)
    assert facts["system_gpu_count"] == 0 or facts["gpu"]  # no GPU here means count 0; a GPU has a name
    assert facts["cpu"] and facts["linux_distribution_name"]


def test_a_system_info_file_must_hold_an_object(tmp_path: Path) -> None:
    path = tmp_path / "info.json"
    path.write_text("[1]")
    with pytest.raises(SysinfoError) as raised:
        sysinfo.load_sysinfo_file(path)
    assert str(raised.value) == (
        f"{path}: expected a JSON object, found list "
        "Hint: write `ci-tool sysinfo --json > FILE` to get the expected shape"
    )


def test_a_system_info_file_with_bad_json_says_where(tmp_path: Path) -> None:
    path = tmp_path / "info.json"
    path.write_text('{\n  "gpu": A10\n}')
    with pytest.raises(SysinfoError, match=r"info.json:2:10: expected JSON, found a syntax error: Expecting value"):
        sysinfo.load_sysinfo_file(path)


BAD_FILES = [
    ("not utf-8", b'{"gpu": "A\xff"}', "1:11: cannot read the system-info file: it is not UTF-8 text (byte 0xff) "
     "Hint: save the file as UTF-8"),
    ("nested thousands deep", b"[" * 10_000 + b"]" * 10_000, "1:65: expected JSON nested at most 64 deep, found "
     "deeper nesting"),
    ("int too large", b'{"system_gpu_count": ' + b"1" * 5000 + b"}", "1:22: expected a number within the range of a "
     "64-bit float (about ±1.8e308), found '" + "1" * 30 + "'... (5000 characters)"),
    ("NaN", b'{"gpu_memory": NaN}', "1:16: expected a number, found 'NaN' Hint: JSON has no NaN or Infinity: write a "
     "finite number"),
    ("key twice", b'{"gpu": "A10", "gpu": "H100"}', "1:16: expected each key once, found 'gpu' again"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "message"), [r[1:] for r in BAD_FILES], ids=[r[0] for r in BAD_FILES])
def test_a_bad_system_info_file_is_a_located_error(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "info.json"
    path.write_bytes(data)
    with pytest.raises(SysinfoError) as raised:
        sysinfo.load_sysinfo_file(path)
    assert str(raised.value) == f"{path}:{message}"


def test_a_system_info_file_may_start_with_a_bom(tmp_path: Path) -> None:
    path = tmp_path / "info.json"
    path.write_bytes(b'\xef\xbb\xbf{"gpu": "A10"}')
    assert sysinfo.load_sysinfo_file(path) == {"gpu": "A10"}


WRONG_VALUES = [
    ("gpu a number", '{"gpu": 5}',
     '1:9 (gpu): expected a GPU name such as "H100" (or null for none, or "na"), found 5'),
    ("negative gpu count", '{\n  "gpu": "A10",\n  "system_gpu_count": -1\n}',
     '3:23 (system_gpu_count): expected a GPU count, a whole number 0 or more (or "na"), found -1'),
    ("gpu count a flag", '{"system_gpu_count": true}',
     '1:22 (system_gpu_count): expected a GPU count, a whole number 0 or more (or "na"), found True'),
    ("gpu count a string", '{"system_gpu_count": "2"}',
     "1:22 (system_gpu_count): expected a GPU count, a whole number 0 or more (or \"na\"), found '2'"),
    ("fractional memory", '{"gpu_memory": 1.5}',
     '1:16 (gpu_memory): expected a whole number of MiB, 0 or more (or null, or "na"), found 1.5'),
    ("flag a list", '{"hostname": "gpu", "supports_fp8": [1]}',
     '1:37 (supports_fp8): expected true or false (or "na"), found a JSON list'),
    ("key named in a value first", '{"cpu": "gpu", "gpu": {}}',
     '1:23 (gpu): expected a GPU name such as "H100" (or null for none, or "na"), found a JSON object'),
]  # fmt: skip


@pytest.mark.parametrize(("data", "message"), [r[1:] for r in WRONG_VALUES], ids=[r[0] for r in WRONG_VALUES])
def test_a_probed_key_with_a_wrong_value_is_a_located_error(tmp_path: Path, data: str, message: str) -> None:
    path = tmp_path / "info.json"
    path.write_text(data)
    with pytest.raises(SysinfoError) as raised:
        sysinfo.load_sysinfo_file(path)
    hint = "Hint: write `ci-tool sysinfo --json > FILE` to get the expected shape"
    assert str(raised.value) == f"{path}:{message} {hint}"


def test_what_probe_reports_reads_back_and_other_keys_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "info.json"
    facts = {**sysinfo.probe(), "gpu": "na", "gpu_memory": None, "rack": 7}
    path.write_text(json.dumps(facts))
    assert sysinfo.load_sysinfo_file(path) == facts
