"""What a stage takes of this host and what the host holds: how many stages `ci-tool run` runs side by side.

    a stage's needs   (from its name: kind, GPU count, mode)
        cores         1: one pytest process at a time (a stage's batches run one after another)
        GPUs          its name's GPU count (0 on CPU); each GPU stage gets its own devices
        alone         perf modes (ModePolicy.runs_alone): no other stage beside it, before or after
    the host          its usable cores, its available memory, its GPU devices (CUDA_VISIBLE_DEVICES when
                      set, else 0..count-1)
    default bound     min(cores, available memory // STAGE_MEMORY_MIB), at least 1: each stage one core and
                      its memory; GPUs never raise it (a GPU stage drives its GPUs from one core)
    `--jobs N`        the bound is N instead; GPUs and `alone` still hold

Stages run side by side while the cores they take stay within the bound and their GPUs are free; any stage
fits a host where nothing runs. With more than one job, a GPU stage sees only its own devices and a CPU
stage none (CUDA_VISIBLE_DEVICES), so no two running stages share a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ci_tool.stages.names import StageName
from ci_tool.stages.query import QueryValue

STAGE_MEMORY_MIB = 2048  # what one stage's pytest process (torch imported, a small engine) may hold
CUDA_DEVICES_ENV = "CUDA_VISIBLE_DEVICES"


@dataclass(frozen=True)
class StageNeeds:
    """What one stage takes while it runs."""

    cores: int
    gpus: int
    alone: bool


@dataclass(frozen=True)
class HostCapacity:
    """What this host offers stages: cores, available memory (None: unknown), GPU device ids."""

    cores: int
    memory_mib: int | None
    devices: tuple[str, ...]


def stage_needs(name: StageName) -> StageNeeds:
    """A stage's needs, from what its name says (module docstring)."""
    return StageNeeds(cores=1, gpus=0 if name.is_cpu else name.gpu_count, alone=name.policy.runs_alone)


def host_capacity(sysinfo: Mapping[str, QueryValue], *, cores: int, environ: Mapping[str, str]) -> HostCapacity:
    """The host as sysinfo reads it (`--system-info` facts included) with its usable cores."""
    memory = sysinfo.get("host_mem_available_mib")
    return HostCapacity(max(1, cores), memory if isinstance(memory, int) else None, gpu_devices(sysinfo, environ))


def gpu_devices(sysinfo: Mapping[str, QueryValue], environ: Mapping[str, str]) -> tuple[str, ...]:
    """The GPU devices stages may be given: CUDA_VISIBLE_DEVICES's when set (only those are ours to hand
    out), else 0 .. system_gpu_count - 1."""
    visible = environ.get(CUDA_DEVICES_ENV)
    if visible is not None:
        return tuple(device.strip() for device in visible.split(",") if device.strip())
    count = sysinfo.get("system_gpu_count")
    return tuple(str(index) for index in range(count if isinstance(count, int) else 0))


def default_jobs(host: HostCapacity) -> int:
    """How many stages this host holds at once when `--jobs` is not given (module docstring)."""
    by_memory = host.cores if host.memory_mib is None else host.memory_mib // STAGE_MEMORY_MIB
    return max(1, min(host.cores, by_memory))


def describe(host: HostCapacity) -> str:
    """`2 cores, no GPU, 22180 MiB available`: what the default bound was derived from."""
    gpus = f"{len(host.devices)} GPU{'s' if len(host.devices) != 1 else ''}" if host.devices else "no GPU"
    memory = f"{host.memory_mib} MiB available" if host.memory_mib is not None else "memory unknown"
    return f"{host.cores} core{'s' if host.cores != 1 else ''}, {gpus}, {memory}"


@dataclass(frozen=True)
class Grant:
    """What a started stage holds: its cores and its devices (() for a CPU stage)."""

    cores: int
    devices: tuple[str, ...]
    alone: bool


@dataclass
class Slots:
    """The host's room for stages under a bound of `jobs`: `fits` / `take` / `give_back`."""

    jobs: int
    devices: tuple[str, ...]
    held: list[Grant] = field(default_factory=list)

    def fits(self, needs: StageNeeds) -> bool:
        """Whether a stage with `needs` may start now (an empty host takes any stage)."""
        if not self.held:
            return True
        if needs.alone or any(grant.alone for grant in self.held):
            return False
        cores = sum(grant.cores for grant in self.held)
        return cores + min(needs.cores, self.jobs) <= self.jobs and needs.gpus <= len(self._free_devices())

    def take(self, needs: StageNeeds) -> Grant:
        """Hold room for a stage that `fits`."""
        grant = Grant(min(needs.cores, self.jobs), self._free_devices()[: needs.gpus], needs.alone)
        self.held.append(grant)
        return grant

    def give_back(self, grant: Grant) -> None:
        self.held.remove(grant)

    def variables(self, grant: Grant) -> dict[str, str]:
        """A stage's environment for its devices: exactly its own (none for a CPU stage), on a host with GPUs."""
        return {CUDA_DEVICES_ENV: ",".join(grant.devices)} if self.devices else {}

    def _free_devices(self) -> tuple[str, ...]:
        taken = {device for grant in self.held for device in grant.devices}
        return tuple(device for device in self.devices if device not in taken)
