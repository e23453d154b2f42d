"""The only module that probes this machine: GPU, GPU count and memory, CPU, distro, host memory.

GPUs are read through NVML (ctypes on libnvidia-ml, no torch import on the hot path) with torch as a
fallback. A probe that fails reports "na" for its keys instead of raising; a machine with no NVIDIA
driver reports `system_gpu_count` 0. Key names follow TensorRT-LLM's sysinfo so test-db files match.
"""

from __future__ import annotations

import ctypes
import os
import platform
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci_tool.errors import SysinfoError, Where
from ci_tool.json_file import describe_json, key_value_position, parse_json
from ci_tool.text_file import read_text

NA = "na"
SysInfo = dict[str, Any]


def probe() -> SysInfo:
    """Everything this machine reports to test-db queries."""
    info: SysInfo = {"sysname": platform.system(), "hostname": _safe(socket.gethostname)}
    machine = platform.machine()
    info.update(
        cpu=machine or NA,
        is_aarch64=machine in ("aarch64", "arm64"),
        is_linux=platform.system() == "Linux",
        is_power=machine.startswith("ppc"),
        is_wsl="microsoft" in platform.release().lower(),
    )
    info.update(_distro())
    info.update(_host_memory())
    info.update(_gpus())
    return info


def load_sysinfo_file(path: str | Path) -> SysInfo:
    """Read a system-info JSON file written by `ci-tool sysinfo --json` (or by hand): an object whose keys
    probe() reports hold what it would (KEY_KINDS); other keys are the file's own facts, taken as they are."""
    text = read_text(path, name="the system-info file", error=SysinfoError)
    data = parse_json(text, file=str(path), error=SysinfoError)
    if not isinstance(data, dict):
        raise SysinfoError(f"expected a JSON object, found {type(data).__name__}", where=Where(str(path)), hint=_HINT)
    for key, value in data.items():
        kind = KEY_KINDS.get(key)
        if kind is not None and not kind.holds(value):
            line, col = key_value_position(text, key) or (None, None)
            raise SysinfoError(
                f"expected {kind.description}, found {describe_json(value)}",
                where=Where(str(path), line, col, yaml_path=key),
                hint=_HINT,
            )
    return data


@dataclass(frozen=True)
class _Kind:
    """What a key of the system info holds; "na" (a probe that failed) is always allowed."""

    description: str
    types: tuple[type, ...]
    nullable: bool = False
    non_negative: bool = False

    def holds(self, value: object) -> bool:
        if value == NA or (value is None and self.nullable):
            return True
        if isinstance(value, bool) and bool not in self.types:  # JSON true is no count
            return False
        if not isinstance(value, self.types):
            return False
        return not (self.non_negative and isinstance(value, int | float) and value < 0)


_HINT = "write `ci-tool sysinfo --json > FILE` to get the expected shape"
_TEXT = _Kind('a string (or "na")', (str,))
_FLAG = _Kind('true or false (or "na")', (bool,))
_MIB = _Kind('a whole number of MiB, 0 or more (or "na")', (int,), non_negative=True)
KEY_KINDS: dict[str, _Kind] = {
    "sysname": _TEXT,
    "hostname": _TEXT,
    "cpu": _TEXT,
    "is_aarch64": _FLAG,
    "is_linux": _FLAG,
    "is_power": _FLAG,
    "is_wsl": _FLAG,
    "linux_distribution_name": _TEXT,
    "linux_version": _TEXT,
    "linux_codename": _TEXT,
    "host_mem_total_mib": _MIB,
    "host_mem_available_mib": _MIB,
    "gpu": _Kind('a GPU name such as "H100" (or null for none, or "na")', (str,), nullable=True),
    "system_gpu_count": _Kind('a GPU count, a whole number 0 or more (or "na")', (int,), non_negative=True),
    "gpu_memory": _Kind(
        'a whole number of MiB, 0 or more (or null, or "na")', (int,), nullable=True, non_negative=True
    ),
    "compute_capability": _Kind(
        'a compute capability such as 9.0 (or null, or "na")', (int, float), nullable=True, non_negative=True
    ),
    "supports_tf32": _FLAG,
    "supports_int8": _FLAG,
    "supports_fp8": _FLAG,
}


def _safe(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except Exception:
        return NA


def _distro() -> SysInfo:
    try:
        release = platform.freedesktop_os_release()
    except OSError:
        return {"linux_distribution_name": NA, "linux_version": NA, "linux_codename": NA}
    return {
        "linux_distribution_name": release.get("ID", NA),
        "linux_version": release.get("VERSION_ID", NA),
        "linux_codename": release.get("VERSION_CODENAME", NA),
    }


def _host_memory() -> SysInfo:
    values: dict[str, Any] = {"host_mem_total_mib": NA, "host_mem_available_mib": NA}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("MemTotal", "MemAvailable"):
                key = "host_mem_total_mib" if name == "MemTotal" else "host_mem_available_mib"
                values[key] = int(rest.split()[0]) // 1024  # kB -> MiB
    except (OSError, ValueError, IndexError):
        pass
    return values


def _gpu_facts(name: str, count: int | str, memory_mib: int | str, capability: float | str) -> SysInfo:
    facts: SysInfo = {
        "gpu": name,
        "system_gpu_count": count,
        "gpu_memory": memory_mib,
        "compute_capability": capability,
    }
    for key, minimum in (("supports_tf32", 8.0), ("supports_int8", 6.1), ("supports_fp8", 8.9)):
        facts[key] = capability >= minimum if isinstance(capability, float) else NA
    return facts


def _no_gpu() -> SysInfo:
    return {
        "gpu": None,
        "system_gpu_count": 0,
        "gpu_memory": None,
        "compute_capability": None,
        "supports_tf32": False,
        "supports_int8": False,
        "supports_fp8": False,
    }


def _gpus() -> SysInfo:
    nvml = _load_nvml()
    if nvml is None:
        return _no_gpu()
    try:
        return _nvml_facts(nvml)
    except OSError:
        return _torch_facts()


def _load_nvml() -> ctypes.CDLL | None:
    for name in ("libnvidia-ml.so.1", "libnvidia-ml.so", "nvml.dll"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def _check(status: int) -> None:
    if status != 0:
        raise OSError(f"NVML call failed with status {status}")


class _MemoryInfo(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


def _nvml_facts(nvml: ctypes.CDLL) -> SysInfo:
    _check(nvml.nvmlInit_v2())
    try:
        count = ctypes.c_uint()
        _check(nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)))
        if count.value == 0:
            return _no_gpu()
        handle = ctypes.c_void_p()
        _check(nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)))
        name = ctypes.create_string_buffer(96)
        _check(nvml.nvmlDeviceGetName(handle, name, 96))
        memory = _MemoryInfo()
        _check(nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)))
        major, minor = ctypes.c_int(), ctypes.c_int()
        _check(nvml.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor)))
        return _gpu_facts(
            _short_gpu_name(name.value.decode()),
            count.value,
            memory.total // 2**20,
            float(f"{major.value}.{minor.value}"),
        )
    finally:
        nvml.nvmlShutdown()


def _torch_facts() -> SysInfo:
    try:
        import torch

        if not torch.cuda.is_available():
            return _no_gpu()
        props = torch.cuda.get_device_properties(0)
        return _gpu_facts(
            _short_gpu_name(props.name),
            torch.cuda.device_count(),
            props.total_memory // 2**20,
            float(f"{props.major}.{props.minor}"),
        )
    except Exception:
        return _gpu_facts(NA, NA, NA, NA)


def _short_gpu_name(name: str) -> str:
    """`NVIDIA H100 PCIe` -> `H100 PCIE`: vendor dropped, upper case, as test-db wildcards expect."""
    words = [word for word in name.split() if word.upper() not in ("NVIDIA", "GEFORCE")]
    return " ".join(words).upper() or NA


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity: a container's or a `taskset`'s share), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)
