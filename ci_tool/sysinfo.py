"""The only module that probes this machine: GPU, GPU count and memory, CPU, distro, host memory.

GPUs are read through NVML (ctypes on libnvidia-ml, no torch import on the hot path) with torch as a
fallback. A probe that fails reports "na" for its keys instead of raising; a machine with no NVIDIA
driver reports `system_gpu_count` 0. Key names follow TensorRT-LLM's sysinfo so test-db files match.
"""

from __future__ import annotations

import ctypes
import platform
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ci_tool.errors import SysinfoError, Where
from ci_tool.json_file import read_json

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
    """Read a system-info JSON file written by `ci-tool sysinfo --json` (or by hand)."""
    data = read_json(path, name="the system-info file", error=SysinfoError)
    if not isinstance(data, dict):
        raise SysinfoError(
            f"expected a JSON object, found {type(data).__name__}",
            where=Where(str(path)),
            hint="write `ci-tool sysinfo --json > FILE` to get the expected shape",
        )
    return data


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
