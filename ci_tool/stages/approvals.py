"""Approval labels (TensorRT-LLM's rule): which selected stages need a label, as pure functions of the request,
the catalog, the stages and the PR's labels.

    label                          a selected stage needs it when
    `ci: post-merge approved`      the run is a full `--post-merge` (one without `--stage-list`) and the
                                   stage is Post-Merge or multi-GPU; or a broad selector in
                                   `--stage-list`/`--extra-stage` matches it
    `ci: full pre-merge approved`  the stage is multi-GPU (the grammar's `multi_gpu`: an `N_GPUs` or
                                   `M_Nodes` token), however it was selected

A broad selector is decided by what the request's glob patterns (those with a `*`) select in the catalog,
never by how they are spelt: together they select all the stages `*`, `*PerfSanity*` or `*Post-Merge*`
selects (`*erfSanity*`, `*-Post-Merge-*`, or `*Perf*-1` and `*Perf*-2` side by side), or more than half
of the catalog's stages (`*-*`). The patterns that take part are broad, and each stage they match needs
the label. A stage named exactly was asked for on purpose and is never broad.

`ci: post-merge approved` also grants the other label: the same approvers grant both. A stage whose label
is missing is blocked: every consumer names it and does not run it (TensorRT-LLM's
`[Test-x86_64-Multi-GPU] Blocked`); the other stages run.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ci_tool.stages.catalog import Stage, stage_glob_matches
from ci_tool.stages.names import LEGACY_POST_MERGE, POST_MERGE
from ci_tool.stages.selection_request import SelectionRequest, flag_name

POST_MERGE_APPROVED = "ci: post-merge approved"
FULL_PRE_MERGE_APPROVED = "ci: full pre-merge approved"
# What TensorRT-LLM's broad selectors select; a request's globs that select as much are broad too.
GUARDED_SETS = (
    ("*", "every stage"),
    ("*PerfSanity*", "every PerfSanity stage"),
    ("*Post-Merge*", "every Post-Merge stage"),
)  # the first a request's globs cover is the one its reason names
BROAD_SHARE = 0.5  # globs that together select more than this share of the catalog's stages are broad
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
        "a full `--post-merge` run (without `--stage-list`), and broad selectors: globs that together select "
        "all the stages " + " or ".join(f"`{selector}`" for selector, _ in GUARDED_SETS) + " selects, or more "
        f"than {BROAD_SHARE:.0%} of the catalog; it also covers the multi-GPU stages",
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


@dataclass(frozen=True)
class BroadSelection:
    """The glob patterns of a request that together select too much of the catalog."""

    patterns: tuple[tuple[str, str], ...]  # (flag, pattern) of each that takes part
    selects: str  # what they select: "every PerfSanity stage", "17 of the 19 stages"
    stages: frozenset[str]  # what they match: each needs POST_MERGE_APPROVED

    @property
    def reason(self) -> str:
        listed = ", ".join(f"{pattern!r} in {flag}" for flag, pattern in self.patterns)
        if len(self.patterns) == 1:
            return f"the broad selector {listed} (it selects {self.selects})"
        return f"the broad selectors {listed} (together they select {self.selects})"


def broad_selection(request: SelectionRequest, catalog: Sequence[Stage]) -> BroadSelection | None:
    """The request's broad selector (see the module docstring), or None when its patterns are narrow."""
    names = [stage.name.name for stage in catalog]
    matches = {(flag, pattern): _matching(pattern, names) for flag, pattern in _globs(request)}
    matches = {glob: found for glob, found in matches.items() if found}
    selected = frozenset().union(*matches.values())
    for selector, selects in GUARDED_SETS:
        guarded = _matching(selector, names)
        if guarded and guarded <= selected:
            taking_part = {glob: found for glob, found in matches.items() if found & guarded}
            return BroadSelection(tuple(taking_part), selects, frozenset().union(*taking_part.values()))
    if len(selected) > len(names) * BROAD_SHARE:
        return BroadSelection(tuple(matches), f"{len(selected)} of the {len(names)} stages", selected)
    return None


def _globs(request: SelectionRequest) -> list[tuple[str, str]]:
    """(flag, pattern) of each glob of the request's stage selectors, as selection reads it."""
    found = []
    for key in SELECTOR_KEYS:
        for item in request.items(key):
            pattern = item.replace("\\", "").replace(LEGACY_POST_MERGE, POST_MERGE)
            if "*" in pattern:
                found.append((flag_name(key), pattern))
    return found


def _matching(pattern: str, names: Sequence[str]) -> frozenset[str]:
    return frozenset(name for name in names if stage_glob_matches(pattern, name))


def is_full_post_merge(request: SelectionRequest) -> bool:
    return request.post_merge and not request.stage_list


def label_for(request: SelectionRequest, stage: Stage, *, catalog: Sequence[Stage]) -> str | None:
    """The approval label a selected stage needs (see the module docstring), or None."""
    return _label(request, stage, broad_selection(request, catalog))


def _label(request: SelectionRequest, stage: Stage, broad: BroadSelection | None) -> str | None:
    if is_full_post_merge(request) and (stage.post_merge or stage.multi_gpu):
        return POST_MERGE_APPROVED
    if broad is not None and stage.name.name in broad.stages:
        return POST_MERGE_APPROVED
    return FULL_PRE_MERGE_APPROVED if stage.multi_gpu else None


def _granted(label: str, labels: Collection[str]) -> bool:
    return label in labels or POST_MERGE_APPROVED in labels


def blocked_stages(
    request: SelectionRequest, stages: Sequence[Stage], labels: Collection[str], *, catalog: Sequence[Stage]
) -> tuple[BlockedStage, ...]:
    """The selected stages whose label the PR lacks, in the given order (`catalog`: all of its stages)."""
    found, broad = [], broad_selection(request, catalog)
    for stage in stages:
        label = _label(request, stage, broad)
        if label is not None and not _granted(label, labels):
            found.append(BlockedStage(stage, label))
    return tuple(found)


def missing_approvals(
    request: SelectionRequest, blocked: Sequence[BlockedStage], *, catalog: Sequence[Stage]
) -> tuple[MissingApproval, ...]:
    """The labels the blocked stages wait for, each with why the run needs it, in table order."""
    waiting = {label: [b.stage.name.name for b in blocked if b.label == label] for label in _LABELS}
    found = []
    if waiting[POST_MERGE_APPROVED]:
        reasons = [f"a full {flag_name('post_merge')} run (without {flag_name('stage_list')})"]
        reasons = reasons if is_full_post_merge(request) else []
        broad = broad_selection(request, catalog)
        reasons += [broad.reason] if broad is not None else []
        found.append(MissingApproval(POST_MERGE_APPROVED, tuple(reasons)))
    names = waiting[FULL_PRE_MERGE_APPROVED]
    if names:
        shown = ", ".join(names[:_LISTED_STAGES])
        more = f" and {len(names) - _LISTED_STAGES} more" if len(names) > _LISTED_STAGES else ""
        reasons = [flag_name(key) for key in MULTI_GPU_KEYS if request.has(key)]
        found.append(MissingApproval(FULL_PRE_MERGE_APPROVED, (*reasons, f"multi-GPU stages {shown}{more}")))
    return tuple(found)


_LABELS = (POST_MERGE_APPROVED, FULL_PRE_MERGE_APPROVED)
