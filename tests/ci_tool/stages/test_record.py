"""The run record: what `ci-tool stage select --json` archives and the bot reads back, and how a record of
another shape is refused."""

from __future__ import annotations

import pytest

from ci_tool.change.narrowing import LineFilter, NarrowPath
from ci_tool.errors import StageError
from ci_tool.stages.record import NarrowedFamily, SelectionRecord, differences, read_record

HEAD, BASE = "a" * 40, "b" * 40
SOURCE = "selection.json of build 3"
FILTER = {"paths": [{"path": "tests/b.py", "gpu": "A10"}], "entries": [{"context": "l0_a10", "line": "tests/c.py"}]}


def test_a_record_reads_back_its_stages_blocked_stages_and_commits() -> None:
    data = {
        "stages": ["A10-PyTorch-1"],
        "blocked": [{"stage": "DGX_H100-4_GPUs-PyTorch-1", "label": "ci: full pre-merge approved"}],
        "custom_run": True,
        "head": HEAD,
        "base": None,
        "notes": [],  # what the record holds besides is the selection's, read by the pipelines
    }
    record = read_record(data, source=SOURCE)
    assert record == SelectionRecord(
        ("A10-PyTorch-1",), {"DGX_H100-4_GPUs-PyTorch-1": "ci: full pre-merge approved"}, True, HEAD, None
    )
    assert record.names == ("A10-PyTorch-1", "DGX_H100-4_GPUs-PyTorch-1")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "selection.json of build 3: expected a JSON object, found list"),
        ({}, "selection.json of build 3: stages: expected a JSON list, found None"),
        ({"stages": "A10-PyTorch-1"}, "selection.json of build 3: stages: expected a JSON list, found 'A10-PyTorch-1'"),
        ({"stages": [1]}, "selection.json of build 3: stages: expected stage names, found [1]"),
        ({"stages": [], "blocked": [{"stage": "X"}]},
         "selection.json of build 3: blocked: expected {\"stage\": ..., \"label\": ...} objects, found {'stage': 'X'}"),
        ({"stages": [], "custom_run": "yes"},
         "selection.json of build 3: custom_run: expected true or false, found 'yes'"),
        ({"stages": [], "head": ""}, "selection.json of build 3: head: expected a commit id or null, found ''"),
        ({"stages": [], "cbts": {"families": []}}, "selection.json of build 3: cbts.families: expected a JSON object, "
         "found []"),
        ({"stages": [], "cbts": {"families": {"A10-PyTorch": {"shards": 0, "filter": FILTER}}}},
         "selection.json of build 3: cbts.families.A10-PyTorch.shards: expected a shard count of at least 1, found 0"),
        ({"stages": [], "cbts": {"families": {"A10-PyTorch": {"shards": 1, "filter": None}}}},
         "selection.json of build 3: cbts.families.A10-PyTorch.filter: expected a JSON object, found None"),
        ({"stages": [], "cbts": {"families": {"A10-PyTorch": {"shards": 1, "filter": {"paths": [3], "entries": []}}}}},
         "selection.json of build 3: cbts.families.A10-PyTorch.filter.paths[0]: expected a JSON object, found 3"),
        ({"stages": [], "cbts": {"families": {"A10-PyTorch": {"shards": 1, "filter": {"paths": [], "entries": [
            {"context": "l0_a10"}]}}}}},
         "selection.json of build 3: cbts.families.A10-PyTorch.filter.entries[0]: expected {\"context\": \"...\", "
         "\"line\": \"...\"}, found {'context': 'l0_a10'}"),
    ],
    ids=["not an object", "no stages", "stages a string", "stage not a name", "blocked without label",
         "custom_run not a switch", "empty head", "families a list", "no shards", "no filter", "path not an object",
         "entry without its line"],
)  # fmt: skip
def test_a_record_of_another_shape_is_one_located_error(data: object, message: str) -> None:
    with pytest.raises(StageError) as raised:
        read_record(data, source=SOURCE)
    assert str(raised.value) == message


def test_a_record_carries_each_narrowed_familys_filter_and_shard_count_and_no_full_one() -> None:
    """What a `-cbts` stage job runs: the filter LineFilter.to_json wrote, read back as it was."""
    narrowed = LineFilter((NarrowPath("tests/b.py", "A10"), NarrowPath("tests/a.py")), (("l0_a10", "tests/c.py"),))
    families = {
        "A10-PyTorch": {"lines": 2, "predicted_seconds": 3.0, "shards": 2, "filter": narrowed.to_json()},
        "CPU-Generic": {"lines": 5, "predicted_seconds": 9.0, "shards": 3, "full": "no CPU records"},
    }
    record = read_record({"stages": [], "cbts": {"scope": "narrowed", "families": families}}, source=SOURCE)
    assert record.narrowed == {"A10-PyTorch": NarrowedFamily(2, narrowed)}


def test_a_record_from_before_the_pipelines_ran_cbts_stages_still_reads() -> None:
    """Its narrowed families carry no filter: its build ran their own stages, and the bot's report reads it."""
    families = {"A10-PyTorch": {"lines": 2, "predicted_seconds": 3.0, "shards": 1}}
    record = read_record({"stages": ["A10-PyTorch-1"], "cbts": {"families": families}}, source=SOURCE)
    assert (record.stages, record.narrowed) == (("A10-PyTorch-1",), {})


def test_differences_name_the_stages_only_one_side_holds_in_their_order() -> None:
    record = SelectionRecord(("A", "C"), {"D": "label"}, False)
    assert differences(["A", "B", "D"], record) == (("C",), ("B",))
