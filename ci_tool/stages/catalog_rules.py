"""The rules a catalog family must follow beyond its YAML shape, as pure checks.

Each check takes parsed values and returns None, or a Problem: the one-line message (expected ...,
found ...) and a hint with the exact fix. The loader (catalog_load.py) attaches file positions.

    rule                         why
    CPU families on `cpu`,       a CPU stage needs no GPU machine, and a GPU stage on `cpu` would render
    GPU families elsewhere       its list and then find no GPU
    `auto:<pool>` with slurm     `auto:` names a Slurm pool: no runner label is spelled that way (a family
                                 that writes no executor runs on Slurm; one that writes another is refused)
    `-x<N>` platforms >= GPUs    a 4-GPU stage on an 1-GPU pool never runs
    counts agree with the name   the name is the one source of GPU/node counts (Jenkins, GitHub, the bot
                                 and local runs read the name); the catalog may repeat them, not differ
    on_demand agrees with name   the OnDemand tag is what every selection reads
    perf mode: splits 1          perf mode runs the whole list in one stage (modes.py)
    splits auto <-> budget       auto needs a per-shard budget; a budget without auto does nothing
    non-test stages: splits 1    the docs and package-sanity stages are one job each
    a context where a list runs  test and package-sanity families render one; the docs stage none
"""

from __future__ import annotations

import re

from ci_tool.stages.executors import AUTO_PREFIX, Executor, pool_of
from ci_tool.stages.modes import TestMode
from ci_tool.stages.names import CPU_GPU_TOKEN, ON_DEMAND_TAG, POST_MERGE, StageKind, StageName
from ci_tool.stages.shard import AutoSplits, Splits

CPU_PLATFORM = "cpu"
Problem = tuple[str, str | None]  # message, hint

_PLATFORM = re.compile(r"[a-z0-9][a-z0-9._-]*")
_PLATFORM_GPUS = re.compile(r"-x0*(\d{1,6})$")  # more digits: more GPUs than any name asks for
_GPUS_TOKEN = re.compile(r"\d+_GPUs")
_NODES_TOKEN = re.compile(r"\d+_Nodes")


def platform_problem(name: StageName, platform: str, executor: Executor = Executor.LOCAL) -> Problem | None:
    """A runner label, or for Slurm families a partition or `auto:<pool>`, that suits the family's GPUs."""
    example = f"e.g. {platform_for(name)!r}"
    pool = pool_of(platform)
    if not _PLATFORM.fullmatch(pool):
        return (
            f"expected a runner label of lower-case letters, digits, '-', '_' and '.' (or auto:<pool> for Slurm), "
            f"found {platform!r}",
            example,
        )
    if platform.startswith(AUTO_PREFIX) and executor is not Executor.SLURM:
        return (
            f"expected `executor: slurm` for the Slurm pool {platform!r} of {name.name!r} "
            f"(auto: picks a Slurm cluster), found executor {executor}",
            f"add `executor: slurm`, or use a runner label, {example}",
        )
    if name.gpu == CPU_GPU_TOKEN and pool != CPU_PLATFORM:
        return f"expected platform {CPU_PLATFORM!r} for the CPU family {name.name!r}, found {platform!r}", None
    if name.gpu != CPU_GPU_TOKEN and pool == CPU_PLATFORM:
        return (
            f"expected a GPU runner label for {name.name!r}, found {platform!r} (no GPUs)",
            f"use the label of its GPU pool, {example}",
        )
    match = _PLATFORM_GPUS.search(pool)
    if match and int(match.group(1)) < name.gpu_count:
        spelled = platform.removesuffix(pool) + platform_for(name)  # keeps an auto: prefix
        return (
            f"expected a runner with at least {name.gpu_count} GPUs for {name.name!r}, "
            f"found {platform!r} ({match.group(1)} GPU{'s' if match.group(1) != '1' else ''})",
            f"e.g. {spelled!r}",
        )
    return None


def count_problem(name: StageName, key: str, written: int) -> Problem | None:
    """`gpu_count` or `node_count` as written against what the name says."""
    said = name.gpu_count if key == "gpu_count" else name.node_count
    if written == said:
        return None
    if name.gpu == CPU_GPU_TOKEN:
        hint = "CPU families have no GPUs" if key == "gpu_count" else None
    else:
        renamed = _renamed(name, written, _GPUS_TOKEN if key == "gpu_count" else _NODES_TOKEN)
        what = "GPU" if key == "gpu_count" else "node"
        hint = f"a {written}-{what} family says so in its name: {renamed!r}"
    return f"expected {key} {said}, as the name {name.name!r} says, found {written}", hint


def on_demand_problem(name: StageName, written: bool) -> Problem | None:
    if written == name.on_demand:
        return None
    says = "has the OnDemand tag" if name.on_demand else "has no OnDemand tag"
    if written:
        tagged = name.name.removesuffix(f"-{POST_MERGE}") + f"-{ON_DEMAND_TAG}"
        hint = f"name it {tagged + ('-' + POST_MERGE if name.post_merge else '')!r}"
    else:
        hint = f"remove the {ON_DEMAND_TAG} tag from the name"
    expected = str(name.on_demand).lower()
    return f"expected on_demand {expected}, as the name {name.name!r} {says}, found {str(written).lower()}", hint


def splits_problem(name: StageName, splits: Splits, *, has_budget: bool) -> Problem | None:
    if splits is AutoSplits.AUTO and not has_budget:
        return (
            "expected budget_minutes with splits: auto (the predicted minutes one shard may take), found none",
            "add e.g. `budget_minutes: 60`",
        )
    if name.mode is TestMode.PERF and splits != 1:
        return (
            f"expected splits 1 for the perf-mode family {name.name!r} (perf mode runs the whole list in one stage), "
            f"found {splits}",
            "write `splits: 1`",
        )
    return None


def context_problem(name: StageName, has_context: bool) -> Problem | None:
    """Whether the family renders a list: test and package-sanity families do, the docs stage does not."""
    wants = name.kind is not StageKind.BUILD_DOCS
    if has_context == wants:
        return None
    if wants:
        return f"expected `context` in family {name.name!r} (the list its stages run), found none", (
            "add e.g. `context: l0_sanity_check`"
        )
    return f"expected no context for the docs stage {name.name!r} (it renders no list), found one", "remove it"


def non_test_splits_problem(name: StageName, splits: Splits) -> Problem | None:
    if name.is_test or splits == 1:
        return None
    kind_words = name.kind.value.replace("_", " ")
    return f"expected splits 1 for the {kind_words} stage {name.name!r} (one job), found {splits}", ("remove `splits`")


def budget_problem(splits: Splits) -> Problem | None:
    """A `budget_minutes` is written: it only means something with `splits: auto`."""
    if splits is AutoSplits.AUTO:
        return None
    return f"expected budget_minutes only with splits: auto, found splits {splits}", (
        "remove budget_minutes, or write `splits: auto`"
    )


def platform_for(name: StageName) -> str:
    """A plausible runner label for a family: `dgx-h100-x4` for DGX_H100-4_GPUs-..."""
    base = (name.gpu or "gpu").lower().replace("_", "-")
    return f"{base}-x{name.gpu_count}" if name.gpu_count > 1 else base


def _renamed(name: StageName, count: int, token: re.Pattern[str]) -> str:
    """The family name with its GPU (or node) count token set to `count` (none for 1)."""
    tokens = name.name.split("-")
    at = 1 + (token is _NODES_TOKEN and len(tokens) > 1 and bool(_GPUS_TOKEN.fullmatch(tokens[1])))
    rest = [t for t in tokens[at:] if not token.fullmatch(t)]
    word = "GPUs" if token is _GPUS_TOKEN else "Nodes"
    return "-".join([*tokens[:at], *([f"{count}_{word}"] if count > 1 else []), *rest])
