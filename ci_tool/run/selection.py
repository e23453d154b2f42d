"""What a test-list id selects: a node id, file or folder, optionally narrowed by `-k EXPR` / `-m EXPR`.

    selector := path ["-k" EXPR] ["-m" EXPR]      (EXPR quoted when it holds blanks)
    path     := folder | file | file "::" name ("::" name)* ["[" param "]"]

A collected item is selected when its node id equals the path or lies under it (`path/...`,
`path::...`, `path[...]`) and, for each filter given, pytest's own `-k`/`-m` expression matches it.
This module is pure; the plugin evaluates the expressions against pytest items.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ci_tool.errors import RunError, Where
from ci_tool.testdb.check import covers

_FILTER_START = re.compile(r"\s-[km](?=\s|$)")


@dataclass(frozen=True)
class Selector:
    """One parsed test-list id."""

    text: str  # the id as written
    path: str  # node id prefix: folder, file or node id, without a trailing "/"
    keyword: str | None = None  # the -k expression
    mark: str | None = None  # the -m expression

    @property
    def file_path(self) -> str:
        """The file or folder to hand pytest for collection."""
        return self.path.split("::", 1)[0]

    def covers_nodeid(self, nodeid: str) -> bool:
        """Whether the path part selects `nodeid` (the -k/-m filters are checked by the plugin)."""
        return covers(self.path, nodeid)


def parse_selector(test_id: str, where: Where | None = None) -> Selector:
    """Parse an id such as `tests/a -k "x and not y"`; raise RunError for a malformed filter."""
    text = test_id.strip()
    start = _FILTER_START.search(text)
    head = text if start is None else text[: start.start()]
    path = head.strip().removeprefix("./").rstrip("/")
    if not path:
        raise RunError(f"expected a test path before the filters, found {test_id!r}", where=where)
    if start is None:
        return Selector(text, path)
    try:
        words = shlex.split(text[start.start() :])
    except ValueError as error:
        raise RunError(
            f"expected -k/-m filters with balanced quotes, found {text[start.start() :].strip()!r} ({error})",
            where=where,
        ) from None
    filters: dict[str, str] = {}
    for index in range(0, len(words), 2):
        flag, expression = words[index], words[index + 1] if index + 1 < len(words) else None
        if flag not in ("-k", "-m") or not expression or flag in filters:
            raise RunError(
                f"expected `-k EXPR` and/or `-m EXPR` after the test path, found {text[start.start() :].strip()!r}",
                where=where,
                hint='quote an expression with blanks: -k "a and not b"',
            )
        filters[flag] = expression
    return Selector(text, path, filters.get("-k"), filters.get("-m"))


def collection_paths(selectors: list[Selector]) -> list[str]:
    """The files and folders pytest must collect, in list order, without any that lies under another."""
    paths = list(dict.fromkeys(selector.file_path for selector in selectors))
    return [path for path in paths if not any(other != path and covers(other, path) for other in paths)]
