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


def _family(**family: object) -> dict[str, object]:
    """A record whose `cbts.families` holds the family A10-PyTorch as given."""
    return {"stages": [], "cbts": {"families": {"A10-PyTorch": family}}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], f"{SOURCE}: expected an object with stages, blocked, custom_run, head, base, cbts, found []"),
        ({}, f"{SOURCE}: expected an object with stages too (RecordJson), found []"),
        ({"stages": "A10-PyTorch-1"}, f"{SOURCE} (stages): expected an array, found 'A10-PyTorch-1'"),
        ({"stages": [1]}, f"{SOURCE} (stages[0]): expected a string, found 1"),
        ({"stages": [], "blocked": [{"stage": "X"}]},
         f'{SOURCE} (blocked[0]): expected an object with label too (BlockedJson), found ["stage"]'),
        ({"stages": [], "custom_run": "yes"}, f"{SOURCE} (custom_run): expected true or false, found 'yes'"),
        ({"stages": [], "head": ""}, f"{SOURCE} (head): expected a commit id or null, found ''"),
        ({"stages": [], "cbts": {"families": []}}, f"{SOURCE} (cbts.families): expected an object, found []"),
        (_family(shards=0, filter=FILTER),
         f"{SOURCE} (cbts.families.A10-PyTorch.shards): expected a shard count of at least 1, found 0"),
        (_family(filter=FILTER),
         f'{SOURCE} (cbts.families.A10-PyTorch): expected an object with shards too (FamilyJson), found ["filter"]'),
        (_family(shards=1, filter=3),
         f"{SOURCE} (cbts.families.A10-PyTorch.filter): expected an object or null, found 3"),
        (_family(shards=1, filter={"paths": [3], "entries": []}),
         f"{SOURCE} (cbts.families.A10-PyTorch.filter.paths[0]): expected an object with path, gpu, found 3"),
        (_family(shards=1, filter={"paths": [], "entries": [{"context": "l0_a10"}]}),
         f"{SOURCE} (cbts.families.A10-PyTorch.filter.entries[0]): expected an object with line too "
         '(FilterEntryJson), found ["context"]'),
    ],
    ids=["not an object", "no stages", "stages a string", "stage not a name", "blocked without label",
         "custom_run not a switch", "empty head", "families a list", "no shards", "shards missing",
         "filter not an object", "path not an object", "entry without its line"],
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


def test_a_record_of_a_newer_selection_reads_the_keys_it_knows() -> None:
    """The selection's other keys are the pipelines' (fail_fast, notes, ...): a key added later is passed over."""
    data = {"stages": ["A10-PyTorch-1"], "queue_priority": 3, "a_later_key": {"x": 1}, "cbts": {"scope": "full"}}
    assert read_record(data, source=SOURCE) == SelectionRecord(("A10-PyTorch-1",), {}, False)


def test_a_record_from_before_the_pipelines_ran_cbts_stages_still_reads() -> None:
    """Its narrowed families carry no filter: its build ran their own stages, and the bot's report reads it."""
    families = {"A10-PyTorch": {"lines": 2, "predicted_seconds": 3.0, "shards": 1}}
    record = read_record({"stages": ["A10-PyTorch-1"], "cbts": {"families": families}}, source=SOURCE)
    assert (record.stages, record.narrowed) == (("A10-PyTorch-1",), {})


def test_differences_name_the_stages_only_one_side_holds_in_their_order() -> None:
    record = SelectionRecord(("A", "C"), {"D": "label"}, False)
    assert differences(["A", "B", "D"], record) == (("C",), ("B",))
