"""Every YAML reader on hostile alias graphs: each loads or raises our located error, in bounded time.

The graphs are the ones that made readers walk forever or exponentially: an anchor holding an alias to
itself, anchors holding each other, billion-laughs fan-out, long alias chains and merge keys (`<<`)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci_tool.bot.authorize import parse_allowlist
from ci_tool.cli import main
from ci_tool.errors import CiToolError, StageError
from ci_tool.perf.baselines import load_baselines
from ci_tool.perf.config import load_config
from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.stages.catalog_schema import parse_catalog
from ci_tool.testdb.load import parse_test_db_file
from ci_tool.yaml_nodes import MAX_ALIAS_REPEATS, compose


def _in_file(name: str, read: Callable[[Path], object]) -> Callable[[str], object]:
    def reader(text: str) -> object:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / name
            path.write_text(text, encoding="utf-8")
            return read(path)

    return reader


def _test_db(text: str) -> object:
    contexts, problems = parse_test_db_file(text, "l0_x.yml")  # collects every problem of the file
    if problems:
        raise problems[0]
    return contexts


READERS: dict[str, Callable[[str], object]] = {
    "test-db": _test_db,
    "catalog": lambda text: parse_catalog(text, file="stages.yml"),
    "allowlist": lambda text: parse_allowlist(text, file="allowlist.yml"),
    "perf config": _in_file("c.yaml", load_config),
    "perf baselines": _in_file("H200.yaml", lambda path: load_baselines(path.parent, "H200")),
    "flaky signatures": _in_file("s.yml", load_flaky_signatures),
}


def _laughs(levels: int, fan_out: int, top: str) -> str:
    """`a0: &a0 [x, x, ...]`, then each level `fan_out` aliases of the one before: fan_out**levels nodes."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * fan_out)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan_out)}]" for i in range(1, levels + 1)]
    return "\n".join(lines) + f"\n{top}: *a{levels}\n"


def _chain(length: int, top: str) -> str:
    """Each anchor a list holding the alias before it: as deep as it is long, from a flat text."""
    lines = ["c0: &c0 [x]"] + [f"c{i}: &c{i} [*c{i - 1}]" for i in range(1, length)]
    return "\n".join(lines) + f"\n{top}: *c{length - 1}\n"


def _merges(levels: int, top: str) -> str:
    """Merge keys that take two of the mapping before them each time: 2**levels under `<<`."""
    lines = ["m0: &m0 {version: 1, tests: [x]}"]
    twice = [f"*m{i - 1}, *m{i - 1}" for i in range(1, levels + 1)]
    lines += [f"m{i}: &m{i} {{<<: [{two}], tests: [{two}]}}" for i, two in enumerate(twice, start=1)]
    return "\n".join(lines) + f"\n{top}: *m{levels}\n"


# keys the readers know, so the hostile nodes sit where each reader walks
KEYS = ["version", "l0_x", "tests", "condition", "terms", "families", "stages", "signatures", "users", "teams",
        "model", "server_configs", "baselines", "cases", "<<"]  # fmt: skip

HOSTILE = {
    "self reference": "l0_evil: &a [ {tests: *a} ]\n",
    "mutual references": "l0_evil: &a [ {tests: &b [ {tests: *a, condition: *b} ]} ]\n",
    "merge key into itself": "l0_evil: &a {<<: *a, tests: [x]}\n",
    "billion laughs": _laughs(9, 10, "l0_evil"),
    "merge-key laughs": _merges(40, "l0_evil"),
    "deep chain": _chain(3000, "l0_evil"),
}


@pytest.mark.parametrize("reader", list(READERS), ids=list(READERS))
@pytest.mark.parametrize("text", list(HOSTILE.values()), ids=list(HOSTILE))
def test_each_reader_refuses_a_hostile_alias_graph_with_a_located_error(reader: str, text: str) -> None:
    with pytest.raises(CiToolError) as raised:
        READERS[reader](text)
    assert raised.value.where is not None and raised.value.where.line is not None


ALIAS_ERRORS = [
    (
        "self reference",
        "s.yml:1:10: expected an alias outside the node its anchor names, found an alias inside it"
        " Hint: a node that holds an alias to itself never ends: move the alias out of the anchored node",
    ),
    (
        "mutual references",
        "s.yml:1:10: expected an alias outside the node its anchor names, found an alias inside it"
        " Hint: a node that holds an alias to itself never ends: move the alias out of the anchored node",
    ),
    (
        "billion laughs",
        f"s.yml:6:5: expected aliases that repeat at most {MAX_ALIAS_REPEATS} nodes and characters, found more"
        " Hint: each alias repeats all of its anchor's node: write the repeated part out, or alias less",
    ),
    ("deep chain", "s.yml:1000:7: expected YAML nested at most 1000 deep, found deeper nesting"),
]


@pytest.mark.parametrize("loader", ["libyaml", "pure Python"])
@pytest.mark.parametrize(("case", "message"), ALIAS_ERRORS, ids=[row[0] for row in ALIAS_ERRORS])
def test_the_alias_errors_say_where_and_why(
    case: str, message: str, loader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if loader == "pure Python":  # PyYAML without libyaml, as on some machines
        monkeypatch.setattr("ci_tool.yaml_nodes._Loader", yaml.SafeLoader)
    with pytest.raises(StageError) as raised:
        compose(HOSTILE[case], file="s.yml", error=StageError)
    assert str(raised.value) == message


def test_aliases_that_repeat_little_still_load() -> None:
    text = "base: &base {gte: 1, lte: 1}\na: *base\nb: {<<: *base, lte: 2}\nlist: &l [x, y]\nmore: [*l, *l]\n"
    root = compose(text, file="s.yml", error=StageError)
    assert root is not None and len(root.value) == 5


def test_repeats_up_to_the_limit_load_and_one_more_is_refused() -> None:
    """A scalar of n characters weighs n + 1: aliases repeating it k times repeat k * (n + 1)."""
    scalar = "x" * 999  # weighs 1000
    fits = f"a: &a {scalar}\nb: [{', '.join(['*a'] * (MAX_ALIAS_REPEATS // 1000))}]\n"
    assert compose(fits, file="s.yml", error=StageError) is not None
    with pytest.raises(StageError, match="repeat at most"):
        compose(fits.replace("]\n", ", *a]\n"), file="s.yml", error=StageError)


@st.composite
def alias_graphs(draw: st.DrawFn) -> str:
    """A YAML text whose nodes alias each other at random: anchors before their aliases, or inside them."""
    defined: list[str] = []  # anchors whose node is complete
    open_anchors: list[str] = []  # anchors of the nodes being written (an alias to one recurses)

    def node(depth: int) -> str:
        anchor = ""
        if draw(st.booleans()):
            name = f"n{len(defined) + len(open_anchors)}"
            anchor, open_anchors[len(open_anchors) :] = f"&{name} ", [name]
        choice = draw(st.sampled_from(["scalar", "list", "map", "alias"] if depth < 4 else ["scalar", "alias"]))
        if choice == "alias" and (defined or open_anchors):
            body = "*" + draw(st.sampled_from(defined + open_anchors))
            anchor = ""  # an alias takes no anchor of its own
        elif choice == "list":
            body = "[" + ", ".join(node(depth + 1) for _ in range(draw(st.integers(0, 12)))) + "]"
        elif choice == "map":
            keys = draw(st.lists(st.sampled_from(KEYS), max_size=5, unique=True))
            body = "{" + ", ".join(f"{key}: {node(depth + 1)}" for key in keys) + "}"
        else:
            body = draw(st.sampled_from(["x", "1", "tests/a.py", "'*a10*'", "null", "true"]))
        if anchor:
            defined.append(open_anchors.pop())
        return anchor + body

    top = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=6, unique=True))
    return "".join(f"{key}: {node(0)}\n" for key in top)


@pytest.mark.parametrize("reader", list(READERS), ids=list(READERS))
@settings(
    max_examples=60, deadline=timedelta(seconds=20), suppress_health_check=[HealthCheck.too_slow]
)  # a loaded 2-core machine: a deadline far above the milliseconds a bounded walk takes
@given(st.one_of(alias_graphs(), st.sampled_from(list(HOSTILE.values()))))
def test_any_alias_graph_loads_or_is_our_error_in_bounded_time(reader: str, text: str) -> None:
    try:
        READERS[reader](text)
    except CiToolError as error:
        assert error.where is not None


def test_the_cli_refuses_the_three_line_file_at_once_with_exit_code_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file from the issue, which made `ci-tool testdb check` run until memory ran out."""
    (tmp_path / "test-db").mkdir()
    (tmp_path / "test-db" / "l0_evil.yml").write_text("version: 0.0.1\nl0_evil: &a [ {tests: *a} ]\n")
    assert main(["testdb", "check", "--test-db", str(tmp_path / "test-db")]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (
        f"error: {tmp_path}/test-db/l0_evil.yml:2:10: expected an alias outside the node its anchor names, found "
        "an alias inside it Hint: a node that holds an alias to itself never ends: move the alias out of the "
        "anchored node"
    )
