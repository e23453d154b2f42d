"""The HTML page every report and dashboard page shares: one self-contained file (its style inline, no
network, no external scripts or fonts), readable without JavaScript, with headings, table headers and
`details` for what expands. Pure: text in, text out; every text from a run goes through `text()`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

STYLE = """
:root { color-scheme: light dark; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --muted: #6e7781; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 72rem;
       padding: 1rem 1.5rem 3rem; }
nav { margin-bottom: 1rem; } nav a { margin-right: 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; } h3 { font-size: 1rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid #d0d7de; padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { font-weight: 600; } td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; }
td code, td a { overflow-wrap: anywhere; } /* a long test id wraps: the other columns stay on the screen */
caption { text-align: left; color: var(--muted); padding-bottom: .3rem; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .9em; }
pre { background: rgba(127, 127, 127, .12); padding: .6rem; overflow-x: auto; white-space: pre-wrap; }
details { margin: .4rem 0 .8rem; } summary { cursor: pointer; }
.state { font-weight: 700; }
.passed, .reused { color: var(--ok); } .failed, .interrupted, .error { color: var(--bad); }
.unstable, .pending, .waiting, .skipped { color: var(--warn); }
.muted { color: var(--muted); }
label { margin-right: .5rem; } input[type=search] { font: inherit; padding: .2rem .4rem; min-width: 18rem; }
svg.trend { vertical-align: middle; }
"""


def text(value: object) -> str:
    """Anything from a run (test names, logs, reasons) as HTML text: never markup, always UTF-8."""
    return html.escape(_writable(str(value)), quote=True)


def attribute(value: object) -> str:
    """A value inside a quoted attribute."""
    return text(value)


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
    """A whole HTML document: `title`, the navigation links (label, href) and the body's parts."""
    links = "".join(f'<a href="{attribute(href)}">{text(label)}</a>' for label, href in nav)
    parts = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{text(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        f'<nav aria-label="ci-tool">{links}</nav>' if nav else "",
        "<main>",
        *body,
        "</main>",
        '<footer class="muted"><p>Made by ci-tool from its history.</p></footer>',
        f"<script>{script}</script>" if script else "",
        "</body>",
        "</html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


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

    def cell(tag: str, index: int, content: str) -> str:
        scope = ' scope="col"' if tag == "th" else ""
        align = ' class="number"' if index in numbers else ""
        return f"<{tag}{scope}{align}>{content}</{tag}>"

    head = "".join(cell("th", i, text(h)) for i, h in enumerate(headers))

    def row_tag(index: int) -> str:
        data = row_data[index] if index < len(row_data) else {}
        return "<tr" + "".join(f' data-{key}="{attribute(value)}"' for key, value in data.items()) + ">"

    body = "\n".join(
        row_tag(n) + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for n, row in enumerate(rows)
    )
    ident = f' id="{attribute(row_id)}"' if row_id else ""
    head_row = f"<caption>{text(caption)}</caption><thead><tr>{head}</tr></thead>"
    return f"<table{ident}>{head_row}<tbody>\n{body}\n</tbody></table>"


def state(value: str, words: str | None = None) -> str:
    """A run or stage state, coloured by its class (and readable without colour: the word is there)."""
    return f'<span class="state {attribute(value)}">{text(words or value)}</span>'


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
