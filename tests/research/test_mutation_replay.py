"""The mutation replay bench end to end on its --quick repository (research/replay/replay_quick.py): a real git
history of two commits, real pytest processes for the records, the baseline and each planted fault. Its faults have
known answers: every mutant of take is caught by test_take, which ran take; label runs only in a process its test
starts with an environment of its own, so no record knows it, and the touched rule misses its faults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "research" / "replay" / "mutation_replay_bench.py"
TEST = "tests/kvengine/test_pool.py"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The replayed commit of the --quick run, as its JSON has it."""
    found = tmp_path_factory.mktemp("replay") / "replay.json"
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--json", str(found)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (commit,) = json.loads(found.read_text())["commits"]
    return commit


def caught(commit: dict[str, Any], rule: str) -> list[tuple[str, str, bool]]:
    return [(fault["function"], fault["operator"], fault["caught"][rule]) for fault in commit["faults"]]


def test_every_mutant_of_the_two_changed_functions_is_planted_and_the_full_set_catches_nine(
    quick: dict[str, Any],
) -> None:
    found = (quick["functions"], len(quick["faults"]), sum(fault["caught"]["full set"] for fault in quick["faults"]))
    assert found == (["src/kvengine/pool.py:label", "src/kvengine/pool.py:take"], 13, 9)


def test_the_touched_rule_misses_the_faults_of_the_function_no_record_knows(quick: dict[str, Any]) -> None:
    missed = [(fault["function"], fault["operator"]) for fault in quick["faults"]
              if fault["caught"]["full set"] and not fault["caught"]["touched, function grain"]]  # fmt: skip
    assert missed == [("label", "flipped comparison"), ("label", "dropped statement"), ("label", "swapped arguments")]


def test_today_s_rules_run_the_full_set_for_a_source_change(quick: dict[str, Any]) -> None:
    assert (quick["scopes"]["today's rules"], caught(quick, "today's rules")) == ("full", caught(quick, "full set"))


RUNS = [
    ("full set", [TEST]),
    ("touched, file grain", [f"{TEST}::test_does_not_fit", f"{TEST}::test_fits_exactly", f"{TEST}::test_take"]),
    ("touched, function grain", [f"{TEST}::test_take"]),
]


@pytest.mark.parametrize(("rule", "paths"), RUNS, ids=[c[0] for c in RUNS])
def test_what_each_rule_runs_of_the_engine_s_tests(quick: dict[str, Any], rule: str, paths: list[str]) -> None:
    assert quick["runs"][rule] == paths


def test_the_function_grain_says_why_it_runs_test_take(quick: dict[str, Any]) -> None:
    assert quick["reasons"][0] == (
        "src/kvengine/pool.py:label, take: touched rule: runs the 1 test(s) that ran them on CPU records from "
        f"{quick['parent'][:12]}"
    )


def test_a_gpu_stage_without_gpu_records_keeps_its_minutes(quick: dict[str, Any]) -> None:
    assert {rule: cost["gpu_minutes"] for rule, cost in quick["costs"].items()} == dict.fromkeys(quick["costs"], 10.0)


def test_the_narrowed_sets_run_for_real_agree_with_the_full_run_s_reading(quick: dict[str, Any]) -> None:
    checked = [(fault["checked"], fault["caught"]["touched, function grain"]) for fault in quick["faults"]
               if fault["checked"] is not None]  # fmt: skip
    assert checked == [(False, False)] * 3
