"""Approval labels: which label a run needs, from its flags and its selected stages."""

from __future__ import annotations

import pytest

from ci_tool.bot.approvals import (
    FULL_PRE_MERGE_APPROVED,
    POST_MERGE_APPROVED,
    MissingApproval,
    is_broad_selector,
    missing_approvals,
    needed_approvals,
)
from ci_tool.bot.grammar import parse_comment

FULL = FULL_PRE_MERGE_APPROVED
POST = POST_MERGE_APPROVED


@pytest.mark.parametrize(
    ("pattern", "broad"),
    [
        ("*", True),
        ("**", True),
        ("*Post-Merge*", True),
        ("*-Post-Merge-*", True),
        ("\\*PerfSanity\\*", True),
        ("***PerfSanity**", True),
        ("*GB300*PerfSanity*", False),
        ("DGX_B200-*", False),
        ("*-Post-Merge-1", False),
        ("A10-PyTorch-1", False),
    ],
)
def test_broad_selectors(pattern: str, broad: bool) -> None:
    assert is_broad_selector(pattern) is broad


NEEDED = [
    ("/bot run", (), {}),
    ("/bot run --disable-fail-fast --high-priority", (), {}),
    ("/bot run --post-merge", (), {POST: ("a full --post-merge run (without --stage-list)",)}),
    ("/bot run --post-merge --only-multi-gpu-test", (), {POST: ("a full --post-merge run (without --stage-list)",)}),
    ('/bot run --post-merge --stage-list "A30-AutoDeploy-1"', ("A30-AutoDeploy-1",), {}),
    ('/bot run --stage-list "*"', (), {POST: ("the broad selector '*' in --stage-list",)}),
    (
        '/bot run --extra-stage "A10-PyTorch-1, \\*PerfSanity\\*"',
        (),
        {POST: ("the broad selector '*PerfSanity*' in --extra-stage",)},
    ),
    (
        '/bot run --stage-list "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-4"',
        ("DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-4",),
        {FULL: ("multi-GPU stages DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-4",)},
    ),
    ("/bot run --add-multi-gpu-test", (), {FULL: ("--add-multi-gpu-test",)}),
    ("/bot run --only-multi-gpu-test", (), {FULL: ("--only-multi-gpu-test",)}),
    (
        '/bot run --stage-list "DGX_H100-*"',
        ("DGX_H100-PyTorch-1", "DGX_H100-4_GPUs-PyTorch-1"),
        {FULL: ("multi-GPU stages DGX_H100-4_GPUs-PyTorch-1",)},
    ),
    (
        '/bot run --post-merge --stage-list "DGX_H100-4_GPUs-PyTorch-1"',
        ("DGX_H100-4_GPUs-PyTorch-1",),
        {FULL: ("multi-GPU stages DGX_H100-4_GPUs-PyTorch-1",)},
    ),
    (
        "/bot run",
        tuple(f"GB200-4_GPUs-PyTorch-{k}" for k in range(1, 8)),
        {
            FULL: (
                "multi-GPU stages GB200-4_GPUs-PyTorch-1, GB200-4_GPUs-PyTorch-2, GB200-4_GPUs-PyTorch-3, "
                "GB200-4_GPUs-PyTorch-4, GB200-4_GPUs-PyTorch-5 and 2 more",
            )
        },
    ),
    ("/bot kill", (), {}),
]


@pytest.mark.parametrize(("comment", "stages", "needed"), NEEDED, ids=[c for c, _, _ in NEEDED])
def test_needed_approvals(comment: str, stages: tuple[str, ...], needed: dict[str, tuple[str, ...]]) -> None:
    assert needed_approvals(parse_comment(comment), stages) == needed


MISSING = [
    ("/bot run --post-merge", (), [POST]),
    ("/bot run --post-merge", [POST], []),
    ("/bot run --add-multi-gpu-test", [], [FULL]),
    ("/bot run --add-multi-gpu-test", [FULL], []),
    ("/bot run --add-multi-gpu-test", [POST], []),
    ("/bot run --post-merge", [FULL], [POST]),
    ('/bot run --stage-list "*"', ["ci: something else"], [POST]),
]


@pytest.mark.parametrize(("comment", "labels", "missing"), MISSING, ids=[f"{c} {ls}" for c, ls, _ in MISSING])
def test_missing_approvals(comment: str, labels: list[str], missing: list[str]) -> None:
    assert [m.label for m in missing_approvals(parse_comment(comment), labels)] == missing


def test_a_missing_label_says_why() -> None:
    assert missing_approvals(parse_comment("/bot run --only-multi-gpu-test"), []) == (
        MissingApproval(FULL, ("--only-multi-gpu-test",)),
    )
