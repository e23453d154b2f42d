"""Reading a mapping against a field table: (YAML, values) and (YAML, problems) tables, and the readers that
moved onto it reporting every problem of a mapping at once."""

from __future__ import annotations

import enum
from pathlib import Path

import pytest

from ci_tool.errors import PerfError, StageError
from ci_tool.perf.config import load_config
from ci_tool.testdb.load import parse_test_db_file
from ci_tool.yaml_fields import Field, Values, boolean, check_fields, choice, integer, read_fields, text
from ci_tool.yaml_nodes import NodeReader, compose


class Color(enum.StrEnum):
    RED = "red"
    GREEN = "green"


def _same_color(values: Values) -> tuple[str, str | None] | None:
    if values.get("color") is Color.RED and values.get("size", 0) > 3:  # type: ignore[operator]
        return f"expected a size of at most 3 for red, found {values['size']}", "red comes small"
    return None


FIELDS = (
    Field("name", text("a name"), required=True, example="box"),
    Field("size", integer("a size >= 1", minimum=1), nullable=True),
    Field("color", choice(Color, "red or green"), check=_same_color),
    Field("lid", boolean()),
)


def _read(source: str) -> tuple[dict[str, object] | None, bool, list[str]]:
    reader = NodeReader("f.yml", StageError)
    node = compose(source, file="f.yml", error=StageError)
    assert node is not None
    found = read_fields(reader, node, "box", "a box (name, size, color, lid)", FIELDS)
    if found is not None and found.complete:
        check_fields(reader, "box", FIELDS, found, found.values)
    values = None if found is None else dict(found.values)
    return values, found is not None and found.complete, [str(problem) for problem in reader.problems]


READS = [
    ("all", "{name: a, size: 2, color: green, lid: true}",
     {"name": "a", "size": 2, "color": Color.GREEN, "lid": True}),
    ("only required", "{name: a}", {"name": "a"}),
    ("null as not written", "{name: a, size: null}", {"name": "a"}),
]  # fmt: skip


@pytest.mark.parametrize(("source", "values"), [r[1:] for r in READS], ids=[r[0] for r in READS])
def test_a_mapping_reads_into_its_values(source: str, values: dict[str, object]) -> None:
    assert _read(source) == (values, True, [])


PROBLEMS = [
    ("no mapping", "[a]", None, False,
     ["f.yml:1:1 (box): expected a box (name, size, color, lid), found a list"]),
    ("required missing", "{size: 2}", {"size": 2}, False,
     ["f.yml:1:1 (box): expected the key 'name', found none Hint: add `name: box`"]),
    ("value refused", "{name: a, size: 0, lid: maybe}", {"name": "a"}, False,
     ["f.yml:1:17 (box.size): expected a size >= 1, found 0",
      "f.yml:1:25 (box.lid): expected true or false, found 'maybe'"]),
    ("wrong word", "{name: a, color: gren}", {"name": "a"}, False,
     ["f.yml:1:18 (box.color): expected red or green, found 'gren' Hint: did you mean 'green'?"]),
    ("unknown key leaves the rest complete", "{name: a, colour: red}", {"name": "a"}, True,
     ["f.yml:1:11 (box.colour): expected one of name, size, color, lid, found key 'colour' Hint: did you mean "
      "'color'?"]),
    ("rule over the values", "{name: a, color: red, size: 4}", {"name": "a", "color": Color.RED, "size": 4}, True,
     ["f.yml:1:18 (box.color): expected a size of at most 3 for red, found 4 Hint: red comes small"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("source", "values", "complete", "problems"), [r[1:] for r in PROBLEMS], ids=[r[0] for r in PROBLEMS]
)
def test_each_problem_of_a_mapping_is_located(
    source: str, values: dict[str, object] | None, complete: bool, problems: list[str]
) -> None:
    assert _read(source) == (values, complete, problems)


def test_a_perf_server_missing_a_key_still_reports_its_bad_values(tmp_path: Path) -> None:
    """Before the field table a server without `kv_cache_config` stopped there: its bad batch size waited for
    the next try."""
    path = tmp_path / "c.yaml"
    path.write_text("version: 1\nmodel: m\nserver_configs:\n- name: s\n  max_batch_size: 0\n  client_configs: [{}]\n")
    with pytest.raises(PerfError) as raised:
        load_config(path)
    assert str(raised.value) == (
        f"{path}: 2 problems, each on a line below\n"
        f"  {path}:4:3 (server_configs[0]): expected the key 'kv_cache_config', found none Hint: add "
        "`kv_cache_config:`\n"
        f"  {path}:5:19 (server_configs[0].max_batch_size): expected an integer >= 1, found 0"
    )


def test_a_block_without_tests_still_reports_its_bad_condition() -> None:
    """Before the field table a block without `tests` stopped there: its bad range waited for the next try."""
    source = "version: 0.0.1\nl0_x:\n- condition:\n    ranges: {system_gpu_count: {gte: x}}\n"
    contexts, problems = parse_test_db_file(source, "l.yml")
    assert [str(problem) for problem in problems] == [
        "l.yml:3:3 (l0_x[0]): expected a `tests` list in the block, found none",
        "l.yml:4:38 (l0_x[0].condition.ranges.system_gpu_count.gte): expected an integer, found 'x' Hint: range "
        "bounds are whole numbers, e.g. gte: 4",
    ]
    assert [context.blocks for context in contexts] == [()]
