"""The YAML node reader's numbers and composition: (scalar, value) and (scalar, hint) tables."""

from __future__ import annotations

import math

import pytest
import yaml

from ci_tool import yaml_nodes
from ci_tool.errors import StageError
from ci_tool.yaml_nodes import INT_MAX, NodeKind, bool_value, compose, float_value, int_value, kind

KINDS = [
    ("word", "x", NodeKind.STR),
    ("quoted number", "'1'", NodeKind.STR),
    ("integer", "1", NodeKind.INT),
    ("float", "1.5", NodeKind.FLOAT),
    ("bool", "yes", NodeKind.BOOL),
    ("null", "~", NodeKind.NULL),
    ("date", "2024-01-01", NodeKind.OTHER_SCALAR),
    ("binary", "!!binary aGk=", NodeKind.OTHER_SCALAR),
    ("own tag", "!mine x", NodeKind.OTHER_SCALAR),
    ("scalar tagged like a collection kind", "!!mapping x", NodeKind.OTHER_SCALAR),
    ("mapping", "{a: 1}", NodeKind.MAPPING),
    ("list", "[1]", NodeKind.SEQUENCE),
]


@pytest.mark.parametrize(("text", "expected"), [r[1:] for r in KINDS], ids=[r[0] for r in KINDS])
def test_kind_names_the_yaml_type(text: str, expected: NodeKind) -> None:
    node = compose(text, file="x.yml", error=StageError)
    assert node is not None
    assert kind(node) is expected


INTS = [
    ("decimal", "4", 4),
    ("negative", "-3", -3),
    ("plus sign", "+3", 3),
    ("zero", "0", 0),
    ("minus zero", "-0", 0),
    ("underscores", "1_000", 1000),
    ("hex", "0x1F", 31),
    ("negative hex", "-0x1F", -31),
    ("binary", "0b101", 5),
    ("largest", str(INT_MAX), INT_MAX),
]


@pytest.mark.parametrize(("text", "value"), [r[1:] for r in INTS], ids=[r[0] for r in INTS])
def test_int_value_reads(text: str, value: int) -> None:
    assert int_value(text) == value


OCTAL = "YAML 1.1 reads a leading 0 as octal and YAML 1.2 as decimal: drop the leading zeros"
TOO_LONG = f"that is more than 19 digits: the largest whole number read is {INT_MAX}"
ODD_INTS = [
    ("leading zero", "07", OCTAL),
    ("leading zeros", "0017", OCTAL),
    ("double zero", "00", OCTAL),
    ("signed octal", "-017", OCTAL),
    ("base 60", "1:30", "YAML 1.1 reads '1:30' as a base-60 number (1:30 is 90): write the whole number"),
    ("thousands of digits", "1" * 5000, TOO_LONG),
    ("long hex", "0x" + "f" * 30, TOO_LONG),
    ("tagged word", "x", ""),  # `!!int x`
    ("tagged float", "1.5", ""),
    ("bare prefix", "0b_", ""),
    ("other digits", "١٢", ""),  # int() reads Arabic-Indic digits; YAML does not
    ("empty", "", ""),
]


@pytest.mark.parametrize(("text", "hint"), [r[1:] for r in ODD_INTS], ids=[r[0] for r in ODD_INTS])
def test_int_value_refuses_odd_forms_with_a_hint(text: str, hint: str) -> None:
    assert int_value(text) == hint


FLOATS = [
    ("plain", "1.5", 1.5),
    ("leading dot", ".5", 0.5),
    ("trailing dot", "1.", 1.0),
    ("underscores", "1_000.5", 1000.5),
    ("exponent", "1.0e+3", 1000.0),
    ("negative", "-2.5", -2.5),
    ("underflow", "1.0e-400", 0.0),
]


@pytest.mark.parametrize(("text", "value"), [r[1:] for r in FLOATS], ids=[r[0] for r in FLOATS])
def test_float_value_reads(text: str, value: float) -> None:
    assert float_value(text) == value


NOT_FINITE = "write a finite number, at most about 1.8e308"
ODD_FLOATS = [
    ("inf", ".inf", NOT_FINITE),
    ("minus inf", "-.inf", NOT_FINITE),
    ("upper inf", "+.INF", NOT_FINITE),
    ("nan", ".nan", NOT_FINITE),
    ("overflow", "1.0e+400", NOT_FINITE),
    ("tagged inf", "inf", NOT_FINITE),  # `!!float inf`: Python's spelling
    ("base 60", "1:30.5", "YAML 1.1 reads '1:30.5' as a base-60 number: write the number itself"),
    ("tagged word", "x", ""),
    ("other digits", "١.٥", ""),
]


@pytest.mark.parametrize(("text", "hint"), [r[1:] for r in ODD_FLOATS], ids=[r[0] for r in ODD_FLOATS])
def test_float_value_refuses_what_is_not_finite(text: str, hint: str) -> None:
    assert float_value(text) == hint


@pytest.mark.parametrize(
    ("text", "value"),
    [("yes", True), ("ON", True), ("False", False), ("off", False), ("maybe", None)],
    ids=["yes", "on", "false", "off", "tagged word"],
)
def test_bool_value(text: str, value: bool | None) -> None:
    assert bool_value(text) is value


def test_libyaml_resolves_the_forms_these_tables_cover() -> None:
    """The tables above are about what YAML 1.1 resolves as int and float (PyYAML's resolver)."""
    kinds = {text: yaml.compose(f"a: {text}").value[0][1].tag.rsplit(":", 1)[1] for text in ("07", "1:30", ".inf")}
    assert kinds == {"07": "int", "1:30": "int", ".inf": "float"}
    assert math.isinf(yaml.safe_load("a: 1.0e+400")["a"])  # what PyYAML itself would hand on


@pytest.mark.parametrize("loader", ["libyaml", "pure Python"])
def test_nesting_beyond_the_limit_is_one_located_error_whichever_loader(
    loader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libyaml refuses deep nesting itself; the pure-Python loader (PyYAML without libyaml, as on some
    machines) composes it on a newer Python, or recurses: the error is ci-tool's, the same for both."""
    if loader == "pure Python":
        monkeypatch.setattr("ci_tool.yaml_nodes._Loader", yaml.SafeLoader)
    with pytest.raises(StageError) as raised:
        compose("a: " + "[" * 1500 + "]" * 1500, file="s.yml", error=StageError)
    assert str(raised.value) == "s.yml:1:1003: expected YAML nested at most 1000 deep, found deeper nesting"


def test_the_pure_python_loader_recursing_too_deep_is_a_located_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_nodes, "_Loader", yaml.SafeLoader)  # no libyaml: composition recurses
    text = "a:\n  b: " + "[" * 5_000 + "]" * 5_000 + "\n"
    with pytest.raises(StageError) as raised:
        compose(text, file="s.yml", error=StageError)
    assert str(raised.value) == "s.yml:2:1004: expected YAML nested at most 1000 deep, found deeper nesting"


def test_a_lone_surrogate_in_the_text_is_an_error() -> None:
    with pytest.raises(StageError) as raised:
        compose("a: 1\nb: x\ud800\n", file="s.yml", error=StageError)
    assert str(raised.value) == "s.yml:2: expected printable text, found character '\\ud800'"


@pytest.mark.parametrize("loader", ["libyaml", "pure Python"])
@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "a: [1, 2",
            "s.yml:1:9: expected valid YAML, found a syntax error: expected ',' or ']', but got '<stream end>'",
        ),
        ("a: b: c", "s.yml:1:5: expected valid YAML, found a syntax error: mapping values are not allowed here"),
    ],
    ids=["unclosed list", "mapping in a scalar"],
)
def test_a_syntax_error_reads_the_same_whichever_loader(
    loader: str, text: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if loader == "pure Python":
        monkeypatch.setattr("ci_tool.yaml_nodes._Loader", yaml.SafeLoader)
    with pytest.raises(StageError) as raised:
        compose(text, file="s.yml", error=StageError)
    assert str(raised.value) == message
