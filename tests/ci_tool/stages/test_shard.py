"""Sharding: pytest-split's least_duration reproduced, our default never worse, plans that cover every test."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import ShardError
from ci_tool.stages.shard import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    AutoSplits,
    ShardPlan,
    least_duration,
    lpt_pairwise,
    plan_shards,
)


def shards_of(plan: ShardPlan) -> list[list[str]]:
    return [list(shard.test_ids) for shard in plan.shards]


# pytest-split's own test cases for least_duration (tests/test_algorithms.py), as (durations, items, splits, groups).
PYTEST_SPLIT_CASES = {
    "one-each": ({"a": 1, "b": 1, "c": 1}, ["a", "b", "c"], 3, [["a"], ["b"], ["c"]]),
    "missing-durations-get-the-mean": ({"a": 1}, ["a", "b"], 2, [["a"], ["b"]]),
    "large-duration-at-end": ({"a": 1, "b": 1, "c": 1, "d": 3}, ["a", "b", "c", "d"], 2, [["d"], ["a", "b", "c"]]),
    "mean-only-of-present-tests": (
        {"b": 1, "c": 1, "d": 1, "e": 10000},
        ["a", "b", "c", "d"],
        2,
        [["a", "c"], ["b", "d"]],
    ),
    "keeps-relative-order": (
        {"a": 2, "b": 3, "c": 4, "d": 5, "e": 10000},
        ["a", "b", "c", "d", "e"],
        2,
        [["e"], ["a", "b", "c", "d"]],
    ),
}


@pytest.mark.parametrize(
    ("durations", "items", "splits", "groups"), PYTEST_SPLIT_CASES.values(), ids=list(PYTEST_SPLIT_CASES)
)
def test_least_duration_matches_pytest_split(
    durations: dict[str, float], items: list[str], splits: int, groups: list[list[str]]
) -> None:
    plan = plan_shards(items, durations, splits=splits, algorithm="least_duration")
    assert shards_of(plan) == groups


def test_least_duration_breaks_ties_by_id_then_lowest_group() -> None:
    # equal seconds: ids in sorted order go to groups 0, 1, 0, 1 (the least loaded, lowest index first)
    assert least_duration(["d", "b", "c", "a"], [1.0, 1.0, 1.0, 1.0], 2) == [[2, 3], [0, 1]]


def test_the_default_is_our_best() -> None:
    assert DEFAULT_ALGORITHM == "lpt_pairwise"
    assert list(ALGORITHMS) == ["least_duration", "lpt_pairwise"]


def test_lpt_pairwise_fixes_a_case_lpt_gets_wrong() -> None:
    # LPT: {3, 2, 2} = 7 and {3, 2} = 5; the best split is {3, 3} = 6 and {2, 2, 2} = 6
    seconds = [3.0, 3.0, 2.0, 2.0, 2.0]
    ids = ["a", "b", "c", "d", "e"]
    assert max(math.fsum(seconds[i] for i in g) for g in least_duration(ids, seconds, 2)) == 7.0
    assert sorted(lpt_pairwise(ids, seconds, 2)) == [[0, 1], [2, 3, 4]]


SECONDS = st.lists(st.floats(min_value=0, max_value=5000, allow_nan=False), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(SECONDS, st.integers(min_value=1, max_value=16))
def test_lpt_pairwise_is_never_worse_than_least_duration(seconds: list[float], splits: int) -> None:
    ids = [f"t{i:03d}" for i in range(len(seconds))]
    durations = dict(zip(ids, seconds, strict=True))
    splits = min(splits, len(ids))
    ours = plan_shards(ids, durations, splits=splits)
    lpt = plan_shards(ids, durations, splits=splits, algorithm="least_duration")
    assert ours.makespan_seconds <= lpt.makespan_seconds
    assert sorted(t for shard in ours.shards for t in shard.test_ids) == ids  # each test exactly once
    assert all(shard.test_ids for shard in ours.shards)  # no shard empty
    assert ours.makespan_seconds >= ours.lower_bound_seconds - 1e-6


def test_shards_keep_list_order_and_predict_their_seconds() -> None:
    plan = plan_shards(["c", "a", "b", "d"], {"a": 4, "b": 3, "c": 2, "d": 1}, splits=2)
    assert shards_of(plan) == [["a", "d"], ["c", "b"]]
    assert [shard.predicted_seconds for shard in plan.shards] == [5.0, 5.0]


def test_isolated_tests_are_balanced_like_the_rest_and_listed_apart() -> None:
    plan = plan_shards(["a", "b", "c"], {"a": 5, "b": 5, "c": 1}, splits=2, isolated=["b", "c"])
    by_first = {shard.test_ids[0]: shard for shard in plan.shards}
    assert {k: (s.test_ids, s.isolated_ids, s.regular_ids) for k, s in by_first.items()} == {
        "a": (("a", "c"), ("c",), ("a",)),
        "b": (("b",), ("b",), ()),
    }


def test_zero_second_tests_still_leave_no_shard_empty() -> None:
    plan = plan_shards(["a", "b", "c"], {"a": 0, "b": 0, "c": 0}, splits=3, algorithm="least_duration")
    assert sorted(len(shard.test_ids) for shard in plan.shards) == [1, 1, 1]


def test_plan_json_shape() -> None:
    plan = plan_shards(["a", "b"], {"a": 1.23456, "b": 2}, splits=2)
    assert plan.to_json() == {"shards": [["b"], ["a"]], "predicted_seconds": [2.0, 1.235]}


def test_a_shard_by_its_one_based_index() -> None:
    plan = plan_shards(["a", "b"], {"a": 1, "b": 2}, splits=2)
    assert plan.shard(2).index == 2
    with pytest.raises(ShardError, match=r"^expected a shard index from 1 to 2, found 3$"):
        plan.shard(3)


@pytest.mark.parametrize(
    ("seconds", "budget", "splits"),
    [
        ([5, 5, 5, 5], 10, 2),
        ([5, 5, 5, 5], 9.99, 4),
        ([5, 5, 5, 5], 20, 1),
        ([3, 3, 2, 2, 2], 6, 2),  # least_duration would need 3 shards for this budget
    ],
    ids=["two", "one-each", "one", "better-than-lpt"],
)
def test_auto_splits_picks_the_fewest_shards_within_the_budget(
    seconds: list[float], budget: float, splits: int
) -> None:
    ids = [f"t{i}" for i in range(len(seconds))]
    plan = plan_shards(ids, dict(zip(ids, seconds, strict=True)), splits=AutoSplits.AUTO, budget_seconds=budget)
    assert (len(plan.shards), plan.makespan_seconds <= budget) == (splits, True)


BAD_PLANS = {
    "empty": (dict(test_ids=[], splits=1), "expected at least one test to shard, found an empty list"),
    "duplicate": (
        dict(test_ids=["a", "a"], splits=1),
        "expected each test once in the list to shard, found 'a' twice Hint: remove the duplicate line",
    ),
    "too-many-shards": (
        dict(test_ids=["a", "b"], splits=3),
        "expected at most 2 shards for 2 tests (no shard may be empty), found splits=3 "
        "Hint: use splits=2, or splits=auto with a budget",
    ),
    "zero-shards": (dict(test_ids=["a"], splits=0), "expected at least 1 shard, found splits=0"),
    "unknown-algorithm": (
        dict(test_ids=["a"], splits=1, algorithm="least_durations"),
        "expected a sharding algorithm (least_duration, lpt_pairwise), found 'least_durations' "
        "Hint: did you mean 'least_duration'?",
    ),
    "auto-without-budget": (
        dict(test_ids=["a"], splits=AutoSplits.AUTO),
        "expected a positive per-shard budget with splits=auto, found None "
        "Hint: give the budget in minutes, e.g. --budget-minutes 120",
    ),
    "test-over-budget": (
        dict(test_ids=["a", "big"], splits=AutoSplits.AUTO, budget_seconds=60),
        "expected every test to fit the per-shard budget of 60 s, found 'big' predicted at 100 s "
        "Hint: raise the budget or give that test a stage of its own",
    ),
}


@pytest.mark.parametrize(("arguments", "message"), BAD_PLANS.values(), ids=list(BAD_PLANS))
def test_plans_that_cannot_be_made(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(ShardError) as caught:
        plan_shards(durations={"a": 1, "big": 100}, **arguments)  # type: ignore[arg-type]
    assert str(caught.value) == message
