"""The HTML page every report and dashboard page shares: one self-contained file (its style inline, no
network, no external scripts or fonts), readable without JavaScript, with headings, table headers and
`details` for what expands. Pure: text in, text out; every text from a run goes through `text()`.

The HTML is jinja2's, from templates/*.html.j2 with autoescape on: a value a template prints is escaped by
`text()` (its finalize), unless it is HTML a macro made (Markup). page(), table() and state() are the
templates' pieces for the dashboard's pages, which build their rows here.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

if TYPE_CHECKING:
    import jinja2


def text(value: object) -> str:
    """Anything from a run (test names, logs, reasons) as HTML text: never markup, always UTF-8."""
    return html.escape(_writable(str(value)), quote=True)


def attribute(value: object) -> str:
    """A value inside a quoted attribute."""
    return text(value)


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment: autoescape on, every printed value through `text()` (html.escape's entities,
    and what UTF-8 cannot carry spelled out), HTML a macro made passed as it is. jinja2 loads with the first page
    (`ci-tool stage run` imports this module; `ci-tool stage parse` must not pay for jinja2)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("ci_tool.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_escaped_once,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(template: str, context: Mapping[str, object]) -> str:
    """`template` (a file under templates/) with `context`."""
    return environment().get_template(template).render(context)


def _escaped_once(value: object) -> Markup:
    return value if isinstance(value, Markup) else Markup(text(value))


def _macros() -> Any:  # jinja2's TemplateModule: its attributes are the macros
    return environment().get_template("macros.html.j2").module


def _writable(value: str) -> str:
    """`value` with what UTF-8 cannot carry spelled out: bytes a log decoded with `surrogateescape` as
    `\\xff`, any other lone surrogate as `\\udcxx` (a page must be written whatever a test printed)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(
            f"\\x{ord(c) - 0xDC00:02x}"
            if 0xDC80 <= ord(c) <= 0xDCFF
            else c.encode("utf-8", "backslashreplace").decode()
            for c in value
        )
    return value


def page(title: str, body: Iterable[str], *, nav: Sequence[tuple[str, str]] = (), script: str = "") -> str:
    """A whole HTML document: `title`, the navigation links (label, href) and the body's parts (HTML); `script`
    is ci-tool's own, never text from a run."""
    parts = [Markup(part) for part in body]
    return render("page.html.j2", {"title": title, "nav": nav, "body": parts, "script": Markup(script)})


def table(
    caption: str,
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    numbers: Sequence[int] = (),
    row_id: str = "",
    row_data: Sequence[Mapping[str, str]] = (),
) -> str:
    """A table whose cells are HTML already (callers escape with `text`); `numbers`: right-aligned columns;
    `row_data`: `data-*` attributes of each row, in row order (what a script filters on)."""
    found = [
        {"cells": [Markup(cell) for cell in row], "data": list((row_data[n] if n < len(row_data) else {}).items())}
        for n, row in enumerate(rows)
    ]
    return str(_macros().cell_table(caption, headers, found, tuple(numbers), row_id))


def state(value: str, words: str | None = None) -> str:
    """A run or stage state, coloured by its class (and readable without colour: the word is there)."""
    return str(_macros().state(value, words))


def code(value: object) -> Markup:
    """`value` as code (escaped)."""
    return Markup(_macros().code(value))


def muted(value: object) -> Markup:
    """`value` in the muted colour (escaped)."""
    return Markup(_macros().muted(value))


def verdict(css_class: str, words: str) -> Markup:
    """A perf verdict's words, coloured by the state class `css_class`."""
    return Markup(_macros().verdict(css_class, words))


def escaped(value: object) -> Markup:
    """`value` as HTML text (a cell of `table`)."""
    return Markup(text(value))


def sparkline(
    values: Sequence[float],
    *,
    label: str,
    reference: float | None = None,
    marks: Sequence[int] = (),
    width: int = 120,
    height: int = 24,
) -> str:
    """A tiny inline-SVG line of `values` (oldest first), with `label` for screen readers; `reference` (a
    baseline) is drawn as a dashed level line; each of `marks` (a change point: the index of the first value
    of a new level) as a vertical line just before that value."""
    if len(values) < 2:
        return ""
    levels = [*values, *([reference] if reference is not None else [])]
    top, bottom = max(levels), min(levels)
    span = (top - bottom) or 1.0

    def y(value: float) -> str:
        return f"{height - 2 - (value - bottom) / span * (height - 4):.1f}"

    step = (width - 4) / (len(values) - 1)
    points = " ".join(f"{2 + index * step:.1f},{y(value)}" for index, value in enumerate(values))
    level = (
        f'<line x1="2" x2="{width - 2}" y1="{y(reference)}" y2="{y(reference)}" stroke="currentColor" '
        'stroke-opacity=".5" stroke-dasharray="3 2"/>'
        if reference is not None
        else ""
    )
    changes = "".join(
        f'<line class="change-point" x1="{2 + (index - 0.5) * step:.1f}" x2="{2 + (index - 0.5) * step:.1f}" '
        f'y1="0" y2="{height}" stroke="currentColor" stroke-opacity=".7" stroke-dasharray="1 1"/>'
        for index in marks
    )
    return (
        f'<svg class="trend" role="img" aria-label="{attribute(label)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{level}{changes}<polyline fill="none" stroke="currentColor" '
        f'stroke-width="1.5" points="{points}"/></svg>'
    )
