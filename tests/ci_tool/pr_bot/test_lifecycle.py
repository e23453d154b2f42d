"""The dispatch life cycle's own rules, on values (pr_bot/): which request a build was triggered with,
the status context it posts on, and whether a passing build can stand in for the request's selection now.
The life cycle against Jenkins and GitHub protocol servers is tests/ci_tool/dispatch/."""

from __future__ import annotations

import json

import pytest

from ci_tool.bot.status import CUSTOM_BUILD_CONTEXT, FULL_BUILD_CONTEXT
from ci_tool.pr_bot.pull_runs import why_not_reusable
from ci_tool.pr_bot.services import context_of, request_of
from ci_tool.stages.record import SelectionRecord
from ci_tool.stages.selection_request import SelectionRequest

CUSTOM = SelectionRequest(stage_list=("A10-PyTorch-1",))


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        ({"REQUEST": json.dumps(SelectionRequest().to_json())}, SelectionRequest()),
        ({"REQUEST": json.dumps(CUSTOM.to_json())}, CUSTOM),
        ({}, None),
        ({"REQUEST": "{not json"}, None),
        ({"REQUEST": json.dumps({"no_such_option": True})}, None),
    ],
    ids=["bare-run", "stage-list", "no-parameter", "not-json", "unknown-option"],
)
def test_a_builds_request_is_read_from_its_parameters(parameters: dict[str, str], expected: object) -> None:
    assert request_of(parameters) == expected


@pytest.mark.parametrize(
    ("parameters", "context"),
    [
        ({"REQUEST": json.dumps(CUSTOM.to_json())}, CUSTOM_BUILD_CONTEXT),
        ({"REQUEST": json.dumps(SelectionRequest().to_json())}, FULL_BUILD_CONTEXT),
        ({}, FULL_BUILD_CONTEXT),  # a build ci-tool did not trigger: the full build's context
    ],
    ids=["custom-run", "full-run", "unreadable"],
)
def test_a_build_posts_on_its_requests_context(parameters: dict[str, str], context: str) -> None:
    assert context_of(parameters) == context


@pytest.mark.parametrize(
    ("record", "now", "why"),
    [
        (None, ("A",), None),  # no record to compare: the caller refuses it by its own words
        (SelectionRecord(("A", "B"), {}, False), None, "holds no request ci-tool reads"),
        (SelectionRecord(("A", "B"), {}, False), ("A", "B"), None),
        (SelectionRecord(("B", "A"), {}, False), ("A", "B"), None),  # the same stages in another order
        (
            SelectionRecord(("A", "B"), {}, False),
            ("A",),
            "ran another selection than its request selects now (ran B, which the request no longer selects)",
        ),
        (
            SelectionRecord(("A",), {}, False),
            ("A", "C"),
            "ran another selection than its request selects now (did not run C, which it selects now)",
        ),
        (
            SelectionRecord(("A", "B"), {}, False),
            ("A", "C"),
            "ran another selection than its request selects now (ran B, which the request no longer selects; "
            "did not run C, which it selects now)",
        ),
    ],
    ids=["no-record", "no-request", "same", "same-reordered", "ran-more", "ran-less", "ran-other"],
)
def test_a_passing_build_stands_in_only_for_the_selection_it_ran(
    record: SelectionRecord | None, now: tuple[str, ...] | None, why: str | None
) -> None:
    assert why_not_reusable(record, now) == why
