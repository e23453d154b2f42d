"""Approval labels: which selected stage needs which label, which stages a PR's labels leave blocked, and
why the run needs each missing label."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.bot.grammar import parse_comment
from ci_tool.stages.approvals import (
    FULL_PRE_MERGE_APPROVED,
    POST_MERGE_APPROVED,
    MissingApproval,
    blocked_stages,
    broad_selection,
    label_for,
    missing_approvals,
)
from ci_tool.stages.catalog import Catalog
from ci_tool.stages.catalog_load import open_catalog
from ci_tool.stages.selection_request import SelectionRequest

CATALOGS = Path(__file__).parent / "catalogs"
CATALOG: Catalog = open_catalog(CATALOGS / "select.yml", CATALOGS / "test-db").catalog
FULL = FULL_PRE_MERGE_APPROVED
POST = POST_MERGE_APPROVED


def request(comment: str) -> SelectionRequest:
    return parse_comment(comment).selection_request()


# (stage patterns, what they select in select.yml, the stages that need the label); 19 stages, 4 PerfSanity
BROAD = [
    ("*", "every stage", 19),
    ("**", "every stage", 19),
    ("\\*PerfSanity\\*", "every PerfSanity stage", 4),
    ("***PerfSanity**", "every PerfSanity stage", 4),
    ("*erfSanity*", "every PerfSanity stage", 4),  # spelt unlike any broad selector, selects as much
    ("*Sanity*", "every PerfSanity stage", 4),
    ("*Post-Merge*", "every Post-Merge stage", 6),
    ("*-Post-Merge-*", "every Post-Merge stage", 6),
    ("*-Post-Merge*, A10-*", "every Post-Merge stage", 10),  # A10-* takes part: it matches A10-FMHA-Post-Merge-1
    ("*-Post-Merge*, A30-*", "every Post-Merge stage", 6),  # A30-* matches no Post-Merge stage: it is narrow
    ("*PerfSanity-Post-Merge-*, *GB300*", "every PerfSanity stage", 4),  # together, not one by one
    ("*-*", "every stage", 19),
    ("*PyTorch*", "every PerfSanity stage", 13),
    ("A*, DGX_H100-*", "12 of the 19 stages", 12),  # more than half of the catalog
]


@pytest.mark.parametrize(("patterns", "selects", "count"), BROAD, ids=[row[0] for row in BROAD])
def test_a_broad_selector_is_decided_by_what_it_selects(patterns: str, selects: str, count: int) -> None:
    broad = broad_selection(request(f'/bot run --stage-list "{patterns}"'), CATALOG.stages)
    assert broad is not None
    assert (broad.selects, len(broad.stages)) == (selects, count)


NARROW = ["*GB300*PerfSanity*", "DGX_H100-*", "*-Post-Merge-1", "A*, CPU-*", "A10-PyTorch-1", "A10-FMHA-Post-Merge-1"]


@pytest.mark.parametrize("patterns", NARROW, ids=NARROW)
def test_globs_that_select_part_of_a_guarded_set_are_narrow(patterns: str) -> None:
    assert broad_selection(request(f'/bot run --stage-list "{patterns}"'), CATALOG.stages) is None


def test_the_stages_named_exactly_are_never_broad() -> None:
    names = ", ".join(stage.name.name for stage in CATALOG.stages)
    assert broad_selection(request(f'/bot run --stage-list "{names}"'), CATALOG.stages) is None


LABELS = [
    ("/bot run", "A10-PyTorch-1", None),
    ("/bot run", "DGX_H100-4_GPUs-PyTorch-1", FULL),
    ("/bot run --post-merge", "A10-PyTorch-1", None),  # the pre-merge part of a post-merge run
    ("/bot run --post-merge", "A10-FMHA-Post-Merge-1", POST),
    ("/bot run --post-merge", "DGX_H100-4_GPUs-PyTorch-1", POST),
    ('/bot run --post-merge --stage-list "A10-FMHA-Post-Merge-1"', "A10-FMHA-Post-Merge-1", None),
    ('/bot run --stage-list "*"', "A10-PyTorch-1", POST),
    ('/bot run --extra-stage "\\*PerfSanity\\*"', "GB300-PyTorch-PerfSanity-1", POST),
    ('/bot run --extra-stage "\\*PerfSanity\\*"', "A10-PyTorch-1", None),  # the selector does not match it
    ('/bot run --stage-list "DGX_H100-*"', "DGX_H100-4_GPUs-PyTorch-1", FULL),
    ('/bot run --stage-list "DGX_H100-*"', "DGX_H100-PyTorch-1", None),
    ("/bot run --add-multi-gpu-test", "DGX_B200-8_GPUs-PyTorch-1", FULL),
]


@pytest.mark.parametrize(("comment", "stage", "label"), LABELS, ids=[f"{c} {s}" for c, s, _ in LABELS])
def test_the_label_a_selected_stage_needs(comment: str, stage: str, label: str | None) -> None:
    assert label_for(request(comment), CATALOG.stage(stage), catalog=CATALOG.stages) == label


BLOCKED = [
    ("/bot run --post-merge", [], {"A10-FMHA-Post-Merge-1": POST, "DGX_H100-4_GPUs-PyTorch-1": POST}),
    ("/bot run --post-merge", [POST], {}),
    ("/bot run --post-merge", [FULL], {"A10-FMHA-Post-Merge-1": POST, "DGX_H100-4_GPUs-PyTorch-1": POST}),
    ("/bot run --add-multi-gpu-test", [], {"DGX_H100-4_GPUs-PyTorch-1": FULL}),
    ("/bot run --add-multi-gpu-test", [FULL], {}),
    ("/bot run --add-multi-gpu-test", [POST], {}),  # the post-merge label grants both
    (
        '/bot run --stage-list "*"',
        ["ci: something else"],
        {"A10-PyTorch-1": POST, "A10-FMHA-Post-Merge-1": POST, "DGX_H100-4_GPUs-PyTorch-1": POST},
    ),
]


@pytest.mark.parametrize(("comment", "labels", "blocked"), BLOCKED, ids=[f"{c} {ls}" for c, ls, _ in BLOCKED])
def test_the_labels_leave_exactly_the_stages_that_need_a_missing_one_blocked(
    comment: str, labels: list[str], blocked: dict[str, str]
) -> None:
    stages = [CATALOG.stage(name) for name in ("A10-PyTorch-1", "A10-FMHA-Post-Merge-1", "DGX_H100-4_GPUs-PyTorch-1")]
    found = blocked_stages(request(comment), stages, labels, catalog=CATALOG.stages)
    assert {b.stage.name.name: b.label for b in found} == blocked


MISSING = [
    (
        "/bot run --post-merge",
        ("A10-FMHA-Post-Merge-1",),
        [MissingApproval(POST, ("a full --post-merge run (without --stage-list)",))],
    ),
    (
        '/bot run --stage-list "*"',
        ("A10-PyTorch-1",),
        [MissingApproval(POST, ("the broad selector '*' in --stage-list (it selects every stage)",))],
    ),
    (
        '/bot run --extra-stage "A10-PyTorch-1, \\*PerfSanity\\*"',
        ("GB300-PyTorch-PerfSanity-1",),
        [
            MissingApproval(
                POST, ("the broad selector '*PerfSanity*' in --extra-stage (it selects every PerfSanity stage)",)
            )
        ],
    ),
    (
        "/bot run --only-multi-gpu-test",
        ("DGX_H100-4_GPUs-PyTorch-1",),
        [MissingApproval(FULL, ("--only-multi-gpu-test", "multi-GPU stages DGX_H100-4_GPUs-PyTorch-1"))],
    ),
    (
        '/bot run --stage-list "DGX_H100-*"',
        ("DGX_H100-4_GPUs-PyTorch-1", "DGX_H100-4_GPUs-PyTorch-DeepSeek-1"),
        [MissingApproval(FULL, ("multi-GPU stages DGX_H100-4_GPUs-PyTorch-1, DGX_H100-4_GPUs-PyTorch-DeepSeek-1",))],
    ),
    ("/bot run --add-multi-gpu-test", (), []),  # nothing blocked: nothing missing
]


@pytest.mark.parametrize(("comment", "blocked", "missing"), MISSING, ids=[c for c, _, _ in MISSING])
def test_a_missing_label_says_why_the_run_needs_it(
    comment: str, blocked: tuple[str, ...], missing: list[MissingApproval]
) -> None:
    wanted = request(comment)
    found = blocked_stages(wanted, [CATALOG.stage(name) for name in blocked], labels=(), catalog=CATALOG.stages)
    assert list(missing_approvals(wanted, found, catalog=CATALOG.stages)) == missing


def test_more_than_five_blocked_stages_are_counted() -> None:
    stages = [s for s in CATALOG.stages if s.multi_gpu and not s.post_merge] * 3  # 9 blocked stages
    wanted = request("/bot run --add-multi-gpu-test")
    blocked = blocked_stages(wanted, stages, labels=(), catalog=CATALOG.stages)
    (missing,) = missing_approvals(wanted, blocked, catalog=CATALOG.stages)
    assert missing.reasons[-1].endswith(" and 4 more")
