"""The test-db query a stage renders its list with: facts from the stage name, merged over sysinfo.

    key               from                                       CPU stages
    stage             post_merge iff the name has Post-Merge     same
    backend           the backend token (omitted when none, and  same
                      for AutoDeploy, as TensorRT-LLM's 2026
                      pipeline sends none)
    orchestrator      ray iff a Ray tag, else mpi                same
    auto_trigger      deepseek / gpt_oss by tag, else others     same
    system_gpu_count  N of N_GPUs, else 1                        0
    gpu               sysinfo's GPU when it has one (the         omitted
                      machine's probe, as on TensorRT-LLM's
                      Kubernetes pods); else the GPU token (or
                      the caller's `gpu`)
    cpu               (sysinfo)                                  `arch`
    linux_distribution_name  (sysinfo)                           ubuntu

Stage-derived keys win over sysinfo. CPU stages ignore sysinfo entirely, as TensorRT-LLM's CI does, so a
CPU stage renders the same list on any machine. Sbatch-style runs that have no sysinfo pass None: then
the name's GPU token stands in for the probe.
"""

from __future__ import annotations

from collections.abc import Mapping

from ci_tool.errors import StageError
from ci_tool.stages.names import UNQUERIED_BACKENDS, StageName

QueryValue = str | int | bool | None
ARCHES = ("x86_64", "aarch64")
CPU_DISTRIBUTION = "ubuntu"


def stage_query(stage: StageName, *, arch: str = "x86_64", gpu: str | None = None) -> dict[str, QueryValue]:
    """The keys a stage's name decides. `gpu` overrides the GPU token where a pool reports another
    name (the B200 PCIe pool reports as B100); `arch` is the build architecture of CPU stages."""
    if arch not in ARCHES:
        raise StageError(
            f"expected an architecture ({', '.join(ARCHES)}) for stage {stage.name!r}, found {arch!r}",
            hint="the catalog's x86 families build on x86_64, SBSA families on aarch64",
        )
    query: dict[str, QueryValue] = {"stage": "post_merge" if stage.post_merge else "pre_merge"}
    if stage.backend is not None and stage.backend not in UNQUERIED_BACKENDS:
        query["backend"] = stage.backend
    query["orchestrator"] = stage.orchestrator
    query["auto_trigger"] = stage.auto_trigger
    if stage.is_cpu:
        query["system_gpu_count"] = 0
        query["cpu"] = arch
        query["linux_distribution_name"] = CPU_DISTRIBUTION
    else:
        query["system_gpu_count"] = stage.gpu_count
        query["gpu"] = gpu or stage.gpu
    return query


def render_query(
    stage: StageName,
    sysinfo: Mapping[str, QueryValue] | None = None,
    *,
    arch: str = "x86_64",
    gpu: str | None = None,
) -> dict[str, QueryValue]:
    """The full query: sysinfo (ignored on CPU stages) with the stage's keys on top."""
    derived = stage_query(stage, arch=arch, gpu=gpu)
    if stage.is_cpu or sysinfo is None:
        return derived
    probed_gpu = sysinfo.get("gpu")
    if probed_gpu:
        derived["gpu"] = probed_gpu
    return {**sysinfo, **derived}
