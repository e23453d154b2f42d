"""The render layer: Groovy/JSON/GitHub spellings of values, and the strict template environment."""

from __future__ import annotations

import pytest

from ci_tool.errors import GenerateError
from ci_tool.generate.render import github_expression, groovy_literal, render


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("A10-PyTorch-1", "'A10-PyTorch-1'"),
        ("it's", r"'it\'s'"),
        ("a\\b", r"'a\\b'"),
        ("${x}", "'${x}'"),  # single quotes: Groovy does not interpolate
        ("two\nlines", r"'two\nlines'"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (42, "42"),
        (["a", 1], "['a', 1]"),
        ({}, "[:]"),
        ({"arch": "x86_64", "gpus": 4}, "['arch': 'x86_64', 'gpus': 4]"),
    ],
    ids=[
        "string",
        "quote",
        "backslash",
        "dollar",
        "newline",
        "true",
        "false",
        "null",
        "int",
        "list",
        "empty-map",
        "map",
    ],
)
def test_groovy_literal(value: object, literal: str) -> None:
    assert groovy_literal(value) == literal


def test_groovy_literal_rejects_other_types() -> None:
    with pytest.raises(GenerateError, match=r"expected a string, number, boolean, list or map .* found 1\.5"):
        groovy_literal(1.5)


def test_github_expression() -> None:
    assert github_expression("matrix.stage") == "${{ matrix.stage }}"


def test_a_missing_context_value_is_an_error_naming_the_template() -> None:
    with pytest.raises(GenerateError, match=r"^template 'L0_Test.groovy.j2' uses a value its context lacks: "):
        render("L0_Test.groovy.j2", {})


def test_an_unknown_template_is_an_error() -> None:
    with pytest.raises(GenerateError, match=r"expected a template named 'nope.j2'"):
        render("nope.j2", {})
