"""Approval labels (reference §5.4): which selected stages need a label, as pure functions of the request,
the stages and the PR's labels.

    label                          a selected stage needs it when
    `ci: post-merge approved`      the run is a full `--post-merge` (one without `--stage-list`) and the
                                   stage is Post-Merge or multi-GPU; or a broad selector (`*`,
                                   `*Post-Merge*`, `*PerfSanity*`, however spelled: `\\*`, `**`,
                                   `*-Post-Merge-*`) in `--stage-list`/`--extra-stage` matches it
    `ci: full pre-merge approved`  the stage is multi-GPU (the grammar's `multi_gpu`: an `N_GPUs` or
                                   `M_Nodes` token), however it was selected

`ci: post-merge approved` also grants the other label: the same approvers grant both. A stage whose label
is missing is blocked: every consumer names it and does not run it (the reference's
`[Test-x86_64-Multi-GPU] Blocked`, §8.1); the other stages run.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ci_tool.stages.catalog import Stage, stage_glob_matches
from ci_tool.stages.request import SelectionRequest, flag_name

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


@dataclass(frozen=True)
class BlockedStage:
    """A selected stage that does not run until the PR carries `label`."""

    stage: Stage
    label: str

    def to_json(self) -> dict[str, object]:
        return {"stage": self.stage.name.name, "label": self.label}


def is_broad_selector(pattern: str) -> bool:
    """Whether a stage pattern is one of the broad selectors, ignoring backslashes, repeated stars and
    dashes next to a star (`\\*`, `**`, `*-Post-Merge-*`)."""
    normal = re.sub(r"-*\*+-*", "*", pattern.replace("\\", ""))
    return normal in BROAD_SELECTORS


def is_full_post_merge(request: SelectionRequest) -> bool:
    return request.post_merge and not request.stage_list


def _broad_selectors(request: SelectionRequest) -> list[tuple[str, str]]:
    """(flag, pattern) of each broad selector the request holds."""
    return [(flag_name(key), p) for key in SELECTOR_KEYS for p in request.items(key) if is_broad_selector(p)]


def label_for(request: SelectionRequest, stage: Stage) -> str | None:
    """The approval label a selected stage needs (see the module docstring), or None."""
    if is_full_post_merge(request) and (stage.post_merge or stage.multi_gpu):
        return POST_MERGE_APPROVED
    if any(stage_glob_matches(pattern.replace("\\", ""), stage.name.name) for _, pattern in _broad_selectors(request)):
        return POST_MERGE_APPROVED
    return FULL_PRE_MERGE_APPROVED if stage.multi_gpu else None


def _granted(label: str, labels: Collection[str]) -> bool:
    return label in labels or POST_MERGE_APPROVED in labels


def blocked_stages(
    request: SelectionRequest, stages: Sequence[Stage], labels: Collection[str]
) -> tuple[BlockedStage, ...]:
    """The selected stages whose label the PR lacks, in the given order."""
    found = []
    for stage in stages:
        label = label_for(request, stage)
        if label is not None and not _granted(label, labels):
            found.append(BlockedStage(stage, label))
    return tuple(found)


def missing_approvals(request: SelectionRequest, blocked: Sequence[BlockedStage]) -> tuple[MissingApproval, ...]:
    """The labels the blocked stages wait for, each with why the run needs it, in table order."""
    waiting = {label: [b.stage.name.name for b in blocked if b.label == label] for label in _LABELS}
    found = []
    if waiting[POST_MERGE_APPROVED]:
        reasons = [f"a full {flag_name('post_merge')} run (without {flag_name('stage_list')})"]
        reasons = reasons if is_full_post_merge(request) else []
        reasons += [f"the broad selector {pattern!r} in {flag}" for flag, pattern in _broad_selectors(request)]
        found.append(MissingApproval(POST_MERGE_APPROVED, tuple(reasons)))
    names = waiting[FULL_PRE_MERGE_APPROVED]
    if names:
        shown = ", ".join(names[:_LISTED_STAGES])
        more = f" and {len(names) - _LISTED_STAGES} more" if len(names) > _LISTED_STAGES else ""
        reasons = [flag_name(key) for key in MULTI_GPU_KEYS if request.has(key)]
        found.append(MissingApproval(FULL_PRE_MERGE_APPROVED, (*reasons, f"multi-GPU stages {shown}{more}")))
    return tuple(found)


_LABELS = (POST_MERGE_APPROVED, FULL_PRE_MERGE_APPROVED)
