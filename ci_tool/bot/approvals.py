"""Approval labels (reference §5.4): the labels a run needs, as pure functions of the request and its stages.

- `ci: post-merge approved`: a full `--post-merge` run (one without `--stage-list`), and the broad
  selectors `*`, `*Post-Merge*` and `*PerfSanity*` in `--stage-list` or `--extra-stage`, however they
  are spelled (`\\*`, `**`, `*-Post-Merge-*`).
- `ci: full pre-merge approved`: multi-GPU stages (the stage-name grammar's `multi_gpu`: an `N_GPUs` or
  `M_Nodes` token), whether they come from `--add-multi-gpu-test`, `--only-multi-gpu-test` or by name.
  A run with `ci: post-merge approved` needs no second label: the same approvers grant both.

A run that misses a label is blocked as a whole and the reply names the label; no stage is dropped
quietly (the reference's `[Test-x86_64-Multi-GPU] Blocked`, §8.1).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ci_tool.bot.flags import flag_by_key
from ci_tool.bot.request import BotRequest
from ci_tool.stages.names import parse_stage_name

POST_MERGE_APPROVED = "ci: post-merge approved"
FULL_PRE_MERGE_APPROVED = "ci: full pre-merge approved"
BROAD_SELECTORS = ("*", "*Post-Merge*", "*PerfSanity*")
SELECTOR_KEYS = ("stage_list", "extra_stage")
MULTI_GPU_KEYS = ("add_multi_gpu_test", "only_multi_gpu_test")
_LISTED_STAGES = 5  # stages named in a reason before "and N more"

# One line per label for `/bot help` and docs/bot.md.
LABEL_RULES: tuple[tuple[str, str], ...] = (
    (
        FULL_PRE_MERGE_APPROVED,
        "multi-GPU stages: `--add-multi-gpu-test`, `--only-multi-gpu-test`, or a "
        "multi-GPU stage named in `--stage-list`/`--extra-stage`",
    ),
    (
        POST_MERGE_APPROVED,
        "a full `--post-merge` run (without `--stage-list`), and the broad selectors "
        + ", ".join(f"`{s}`" for s in BROAD_SELECTORS)
        + "; it also covers the multi-GPU stages",
    ),
)


@dataclass(frozen=True)
class MissingApproval:
    """A label the run needs and the PR lacks, with why it is needed."""

    label: str
    reasons: tuple[str, ...]


def is_broad_selector(pattern: str) -> bool:
    """Whether a stage pattern is one of the broad selectors, ignoring backslashes, repeated stars and
    dashes next to a star (`\\*`, `**`, `*-Post-Merge-*`)."""
    normal = re.sub(r"-*\*+-*", "*", pattern.replace("\\", ""))
    return normal in BROAD_SELECTORS


def is_full_post_merge(request: BotRequest) -> bool:
    return request.has("post_merge") and not request.has("stage_list")


def needed_approvals(request: BotRequest, selected_stages: Sequence[str] = ()) -> dict[str, tuple[str, ...]]:
    """The labels a run needs -> why. `selected_stages` are the resolved stage names (none before the
    catalog is consulted: then only the request's flags count)."""
    if request.command != "run":
        return {}
    post_merge: list[str] = []
    if is_full_post_merge(request):
        post_merge.append("a full --post-merge run (without --stage-list)")
    for key in SELECTOR_KEYS:
        flag = flag_by_key(key).name
        post_merge += [f"the broad selector {p!r} in {flag}" for p in request.items(key) if is_broad_selector(p)]
    if post_merge:
        return {POST_MERGE_APPROVED: tuple(post_merge)}
    multi_gpu = [flag_by_key(key).name for key in MULTI_GPU_KEYS if request.has(key)]
    stages = [name for name in selected_stages if parse_stage_name(name).multi_gpu]
    if stages:
        shown = ", ".join(stages[:_LISTED_STAGES])
        more = f" and {len(stages) - _LISTED_STAGES} more" if len(stages) > _LISTED_STAGES else ""
        multi_gpu.append(f"multi-GPU stages {shown}{more}")
    return {FULL_PRE_MERGE_APPROVED: tuple(multi_gpu)} if multi_gpu else {}


def missing_approvals(
    request: BotRequest, labels: Iterable[str], selected_stages: Sequence[str] = ()
) -> tuple[MissingApproval, ...]:
    """The labels a run needs that the PR does not carry (`ci: post-merge approved` covers both)."""
    present = set(labels)
    missing = []
    for label, reasons in needed_approvals(request, selected_stages).items():
        if label not in present and POST_MERGE_APPROVED not in present:
            missing.append(MissingApproval(label, reasons))
    return tuple(missing)
