"""What a stage takes of this host and what the host holds: how many stages `ci-tool run` runs side by side,
and in how many processes a stage runs its tests.

    a stage's needs   (from its name and its family)
        cores         its test processes: 1, or for a family with `parallel_tests` the cores the run gives
                      each such stage (`stage_cores`; pytest-xdist workers, one a core)
        GPUs          its name's GPU count (0 on CPU); each GPU stage gets its own devices
        alone         perf modes (ModePolicy.runs_alone): no other stage beside it, before or after, and
                      its tests in one process (a measurement shares nothing)
    the host          its usable cores, its available memory, its GPU devices (CUDA_VISIBLE_DEVICES when
                      set, else 0..count-1)
    default jobs      min(cores, available memory // STAGE_MEMORY_MIB), at least 1: each stage one core and
                      its memory; GPUs never raise it (a GPU stage drives its GPUs from one core)
    `--jobs N`        at most N stages at once instead; cores, GPUs and `alone` still hold
    stage cores       one stage at a time: the whole host (its cores, as far as memory holds a process a
                      core). Side by side: what is left of the cores after one for each other stage that
                      runs here, shared evenly by the parallel stages, at least one each

Stages run side by side while they are at most `jobs`, the cores they take stay within the host's and their
GPUs are free; any stage fits a host where nothing runs. A GPU stage sees only its own devices and a CPU
stage none (CUDA_VISIBLE_DEVICES), so no two running stages share a GPU and no CPU test reaches for one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
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


def stage_needs(name: StageName, workers: int = 1) -> StageNeeds:
    """A stage's needs, from what its name says and its test processes (module docstring)."""
    return StageNeeds(cores=workers, gpus=0 if name.is_cpu else name.gpu_count, alone=name.policy.runs_alone)


def run_stage_cores(
    host: HostCapacity,
    *,
    jobs: int,
    stages: Sequence[StageName],
    parallel_families: Collection[str],
    runs_here: Callable[[StageName], bool],
) -> int:
    """`stage_cores` for a run of `stages`: those that run here and not alone, parallel ones and others."""
    here = [name for name in stages if runs_here(name) and not name.policy.runs_alone]
    parallel = sum(1 for name in here if name.family in parallel_families)
    return stage_cores(host, jobs=jobs, parallel=parallel, others=len(here) - parallel)


def stage_cores(host: HostCapacity, *, jobs: int, parallel: int = 0, others: int = 0) -> int:
    """The cores (test processes) each of `parallel` stages that run their tests in parallel gets, beside
    `others` stages that run here in one process each (module docstring)."""
    whole = processes_held(host)
    if jobs <= 1 or parallel == 0:
        return whole
    beside = min(others, max(0, jobs - parallel))
    return max(1, (whole - beside) // parallel)


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


def processes_held(host: HostCapacity) -> int:
    """How many test processes this host holds at once: a core and STAGE_MEMORY_MIB each, at least one."""
    by_memory = host.cores if host.memory_mib is None else host.memory_mib // STAGE_MEMORY_MIB
    return max(1, min(host.cores, by_memory))


def default_jobs(host: HostCapacity) -> int:
    """How many stages this host holds at once when `--jobs` is not given (module docstring): a process each."""
    return processes_held(host)


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
    """The host's room for at most `jobs` stages on its `cores`: `fits` / `take` / `give_back`."""

    jobs: int
    devices: tuple[str, ...]
    cores: int = 0  # 0: as many as `jobs` (a stage a core)
    held: list[Grant] = field(default_factory=list)

    def fits(self, needs: StageNeeds) -> bool:
        """Whether a stage with `needs` may start now (an empty host takes any stage)."""
        if not self.held:
            return True
        if needs.alone or any(grant.alone for grant in self.held) or len(self.held) >= self.jobs:
            return False
        cores = sum(grant.cores for grant in self.held)
        return cores + min(needs.cores, self._cores) <= self._cores and needs.gpus <= len(self._free_devices())

    @property
    def _cores(self) -> int:
        return max(self.cores, self.jobs)

    def take(self, needs: StageNeeds) -> Grant:
        """Hold room for a stage that `fits`."""
        grant = Grant(min(needs.cores, self._cores), self._free_devices()[: needs.gpus], needs.alone)
        self.held.append(grant)
        return grant

    def give_back(self, grant: Grant) -> None:
        self.held.remove(grant)

    def variables(self, grant: Grant) -> dict[str, str]:
        """A stage's environment for its devices: exactly its own (none for a CPU stage), on a host with GPUs."""
        return device_variables(grant.devices, self.devices)

    def _free_devices(self) -> tuple[str, ...]:
        taken = {device for grant in self.held for device in grant.devices}
        return tuple(device for device in self.devices if device not in taken)


def device_variables(given: tuple[str, ...], host_devices: tuple[str, ...]) -> dict[str, str]:
    """CUDA_VISIBLE_DEVICES for a stage given `given` of the host's GPUs: exactly those (none for a CPU
    stage, whose tests then never reach for a GPU, one stage at a time too); nothing on a host without."""
    return {CUDA_DEVICES_ENV: ",".join(given)} if host_devices else {}
