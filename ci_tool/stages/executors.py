"""Where a stage's processes run, as the catalog and the run commands name it. Pure.

    executor  runs each stage                                     platform means
    local     on this machine (a CI agent of the stage's          a runner label (`a10`, `dgx-h100-x4`)
              platform, or yours): ci_tool.run.stage_runner
    slurm     as one batch job on the cluster SLURM_CONF names    a Slurm partition, or `auto:<pool>`
              (ci_tool.run.slurm_executor)                        (TensorRT-LLM's CI picks a cluster of the
                                                                  pool; here the pool is the partition)

A family says `executor: slurm` in the catalog; `ci-tool run` and `ci-tool stage run` take `--executor`.
"""

from __future__ import annotations

import enum

AUTO_PREFIX = "auto:"  # `auto:<pool>`: a Slurm pool


class Executor(enum.StrEnum):
    """What runs a stage's pytest processes."""

    LOCAL = "local"
    SLURM = "slurm"


def pool_of(platform: str) -> str:
    """The pool a platform names: `auto:dgx-b200-flex` -> `dgx-b200-flex`; a plain label is its own pool.
    A Slurm stage is submitted to its pool's partition."""
    return platform.removeprefix(AUTO_PREFIX)
