"""Matching rules, one behaviour per row, on tiny blocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.errors import TestDbError, Where
from ci_tool.testdb.lines import parse_test_line
from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.model import Block, Condition, Entry, Range, TestDb
from ci_tool.testdb.select import matches, normalize_query, render


def block(terms: dict | None = None, ranges: dict | None = None, wildcards: dict | None = None) -> Block:
    condition = Condition(terms or {}, ranges or {}, wildcards or {})
    return Block("l0_x", 0, condition, (), Where("l0_x.yml", 3, 3))


MATCHING = [
    ("term equal", block(terms={"stage": "pre_merge"}), {"stage": "pre_merge"}, True),
    ("term different", block(terms={"stage": "pre_merge"}), {"stage": "post_merge"}, False),
    ("term is case-sensitive", block(terms={"backend": "pytorch"}), {"backend": "PyTorch"}, False),
    ("term boolean vs json true", block(terms={"supports_fp8": "true"}), {"supports_fp8": True}, True),
    ("term boolean vs string True", block(terms={"supports_fp8": "true"}), {"supports_fp8": "True"}, True),
    ("term number vs int", block(terms={"n": "4"}), {"n": 4}, True),
    ("term key missing from query", block(terms={"backend": "cpp"}), {}, True),
    ("term key null in query", block(terms={"backend": "cpp"}), {"backend": None}, True),
    ("range inside", block(ranges={"system_gpu_count": Range(4, 4)}), {"system_gpu_count": 4}, True),
    ("range from string", block(ranges={"system_gpu_count": Range(4, 4)}), {"system_gpu_count": "4"}, True),
    ("range below", block(ranges={"system_gpu_count": Range(2, None)}), {"system_gpu_count": "1"}, False),
    ("range above", block(ranges={"system_gpu_count": Range(None, 2)}), {"system_gpu_count": 8}, False),
    ("range open both", block(ranges={"system_gpu_count": Range()}), {"system_gpu_count": 0}, True),
    ("range integral float string", block(ranges={"gpu_memory": Range(80000)}), {"gpu_memory": "81559.0"}, True),
    ("range key missing", block(ranges={"system_gpu_count": Range(1, 1)}), {"gpu": "A10"}, True),
    ("wildcard lower pattern upper value", block(wildcards={"gpu": ("*h100*",)}), {"gpu": "H100 PCIE"}, True),
    ("wildcard upper pattern lower value", block(wildcards={"gpu": ("*H100*",)}), {"gpu": "h100"}, True),
    ("wildcard any of", block(wildcards={"gpu": ("*a10*", "*l40s*")}), {"gpu": "L40S"}, True),
    ("wildcard none of", block(wildcards={"gpu": ("*a10*", "*l40s*")}), {"gpu": "H100"}, False),
    ("wildcard a10 also matches A100X", block(wildcards={"gpu": ("*a10*",)}), {"gpu": "A100X"}, True),
    ("wildcard is whole-string", block(wildcards={"cpu": ("x86_64",)}), {"cpu": "x86_64_v2"}, False),
    (
        "wildcard na drops the block",
        block(wildcards={"linux_distribution_name": ("ubuntu*",)}),
        {"linux_distribution_name": "na"},
        False,
    ),
    ("no condition matches all", block(), {"gpu": "A10", "stage": "post_merge"}, True),
    (
        "all kinds must hold",
        block(terms={"stage": "pre_merge"}, wildcards={"gpu": ("*a10*",)}),
        {"stage": "pre_merge", "gpu": "H100"},
        False,
    ),
]


@pytest.mark.parametrize(("fake", "query", "expected"), [r[1:] for r in MATCHING], ids=[r[0] for r in MATCHING])
def test_matches(fake: Block, query: dict[str, object], expected: bool) -> None:
    assert matches(fake, normalize_query(query)) is expected


def test_a_range_key_with_a_non_integer_query_value_is_an_error() -> None:
    fake = block(ranges={"system_gpu_count": Range(1, 1)})
    with pytest.raises(TestDbError) as raised:
        matches(fake, normalize_query({"system_gpu_count": "na"}))
    assert str(raised.value) == (
        "l0_x.yml:3:3: expected an integer query value for range key 'system_gpu_count', found 'na' "
        'Hint: pass system_gpu_count as a whole number, e.g. "system_gpu_count": 1'
    )


def test_a_nested_query_value_is_an_error() -> None:
    with pytest.raises(TestDbError, match="expected a string, number, boolean or null for query key 'gpu', found list"):
        normalize_query({"gpu": ["A10"]})


@pytest.fixture
def small_db(tmp_path: Path) -> TestDb:
    (tmp_path / "l0_x.yml").write_text("""\
version: 0.0.1
l0_x:
- condition: {terms: {stage: pre_merge}}
  tests: [a.py, b.py TIMEOUT (5)]
- condition: {terms: {stage: post_merge}}
  tests: [c.py]
- tests: [b.py TIMEOUT (5), d.py ISOLATION]
""")
    return load_test_db(tmp_path)


def test_render_is_the_union_in_file_order_each_line_once(small_db: TestDb) -> None:
    lines = render(small_db, "l0_x", normalize_query({"stage": "pre_merge"}))
    assert [line.raw for line in lines] == ["a.py", "b.py TIMEOUT (5)", "d.py ISOLATION"]


def test_render_without_the_key_selects_every_block(small_db: TestDb) -> None:
    assert [line.test_id for line in render(small_db, "l0_x", {})] == ["a.py", "b.py", "c.py", "d.py"]


def test_an_empty_render_is_an_error_that_prints_the_query(tmp_path: Path) -> None:
    (tmp_path / "l0_x.yml").write_text(
        "version: 0.0.1\nl0_x:\n- condition: {terms: {stage: pre_merge}}\n  tests: [a.py]\n"
    )
    db = load_test_db(tmp_path)
    with pytest.raises(TestDbError) as raised:
        render(db, "l0_x", normalize_query({"stage": "post_merge", "gpu": "A10"}))
    assert str(raised.value) == (
        f"{tmp_path}/l0_x.yml: expected the query to select at least one test, found an empty render of context "
        "'l0_x' for query {gpu='A10', stage='post_merge'} "
        "Hint: check the query's gpu, system_gpu_count, stage and backend against the blocks' conditions"
    )
    assert render(db, "l0_x", normalize_query({"stage": "post_merge"}), allow_empty=True) == []


def test_an_unknown_context_suggests_the_closest(small_db: TestDb) -> None:
    with pytest.raises(TestDbError) as raised:
        render(small_db, "l0_y", {})
    assert str(raised.value) == (
        f"{small_db.root}: expected a context defined in the test-db, found no context 'l0_y' "
        "Hint: did you mean 'l0_x'?"
    )


def test_entries_keep_their_parsed_annotations(small_db: TestDb) -> None:
    lines = render(small_db, "l0_x", {})
    assert lines[1] == parse_test_line("b.py TIMEOUT (5)")
    assert isinstance(small_db.contexts["l0_x"].blocks[0].entries[0], Entry)
