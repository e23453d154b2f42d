"""Reading the report's HTML pages back: `parsed` turns a page into its elements (test_html.py, test_renderers.py)."""

from __future__ import annotations

import html.parser
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


class Elements(html.parser.HTMLParser):
    """The start tags, attributes and text of a page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(page: str) -> Elements:
    elements = Elements()
    elements.feed(page)
    elements.close()
    return elements
