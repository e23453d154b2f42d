"""Render a template of `templates/` with a context of plain values.

The environment is strict: an unknown variable is an error (StrictUndefined), nothing is HTML-escaped,
and a template keeps its trailing newline. Filters only spell a value in the target language; they
decide nothing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping

import jinja2

from ci_tool.errors import GenerateError


def groovy_literal(value: object) -> str:
    """`value` spelled as a Groovy literal: strings single-quoted (no `${}` interpolation), lists, maps."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
        return f"'{escaped}'"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(groovy_literal(item) for item in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "[:]"
        return "[" + ", ".join(f"{groovy_literal(str(k))}: {groovy_literal(v)}" for k, v in value.items()) + "]"
    raise GenerateError(f"expected a string, number, boolean, list or map for a Groovy literal, found {value!r}")


def json_literal(value: object) -> str:
    """`value` as one line of JSON with ASCII escapes (JSON is also a YAML flow value)."""
    return json.dumps(value, ensure_ascii=True)


def github_expression(expression: str) -> str:
    """`expression` wrapped as a GitHub Actions expression, `${{ ... }}`."""
    return "${{ " + expression + " }}"


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ci_tool.generate", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["groovy"] = groovy_literal
    env.filters["json"] = json_literal
    env.filters["gha"] = github_expression
    return env


def render(template: str, context: Mapping[str, object]) -> str:
    """Render `template` (a file name under templates/) with `context`."""
    try:
        return environment().get_template(template).render(context)
    except jinja2.TemplateNotFound:
        raise GenerateError(f"expected a template named {template!r} in ci_tool/generate/templates") from None
    except jinja2.UndefinedError as error:
        raise GenerateError(f"template {template!r} uses a value its context lacks: {error.message}") from None
