"""pytest plugin of a stage with a priority (stages/priority.py): `--priority-file FILE` names, one a line,
the tests to run first, in order; the selected items they cover run first, the others after them in the
order pytest collected them.

    entry   covers an item that is it or is under it: `a.py` every test of that file, `a.py::test_x` each
            parameter set of test_x
    group   consecutive entries of one file: the items a group covers run together, in collection order,
            so the module's fixtures are set up once for them; the groups run in the file's order

Only the order changes: which items run (the test list's selection, the resumes and reruns) and their
markers (TIMEOUT, SKIP, waives) are the test-list plugin's, applied before this plugin's hook. A module
whose tests run in two groups (or a group and the rest) sets up its module-scoped fixtures once for each:
the time saved is in reaching a failure, not in the process's total.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest

from ci_tool.errors import CiToolError
from ci_tool.layout import ORDER_PLUGIN
from ci_tool.testdb.lines import file_of
from ci_tool.text_file import lines, read_text

PLUGIN = ORDER_PLUGIN
OPTION = "--priority-file"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("ci-tool").addoption(OPTION, metavar="FILE", help="Run these tests first, in this order.")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("priority_file", None)
    if not path:
        return
    try:
        text = read_text(path, name="the priority file", error=CiToolError)
    except CiToolError as error:
        raise pytest.UsageError(str(error)) from None
    entries = [line.strip() for line in lines(text) if line.strip()]
    config.pluginmanager.register(_Order(groups(entries)), "ci-tool-order")


def groups(entries: list[str]) -> dict[str, int]:
    """Each entry's group: the place of the first entry of its run of consecutive entries of one file (an
    entry listed twice keeps its first)."""
    found: dict[str, int] = {}
    group = 0
    for place, entry in enumerate(entries):
        if place and file_of(entry) != file_of(entries[place - 1]):
            group = place
        found.setdefault(entry, group)
    return found


class _Order:
    def __init__(self, ranks: Mapping[str, int]) -> None:
        self.ranks = ranks  # entry -> its group
        self.first = 0

    @pytest.hookimpl(trylast=True)  # after the test list chose the items: this only orders them
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        rest = max(self.ranks.values(), default=-1) + 1  # after every group
        ranked = [(min((self.ranks[a] for a in ancestors(item.nodeid) if a in self.ranks), default=rest), item)
                  for item in items]  # fmt: skip
        self.first = sum(1 for rank, _ in ranked if rank < rest)
        # stable: within a group, and among the rest, the collection order stays
        items[:] = [item for _, item in sorted(ranked, key=lambda pair: pair[0])]

    def pytest_report_collectionfinish(self, items: list[pytest.Item]) -> str:
        return f"ci-tool order: {self.first} of {len(items)} selected tests run first ({OPTION})"


def ancestors(nodeid: str) -> Iterator[str]:
    """`d/a.py::C::t[1]`, `d/a.py::C::t`, `d/a.py::C`, `d/a.py`, `d`: the ids that cover a node id."""
    parts = nodeid.split("::")
    for count in range(len(parts), 0, -1):
        *above, last = parts[:count]
        yield "::".join(parts[:count])
        if "[" in last and count > 1:
            yield "::".join([*above, last.split("[", 1)[0]])
    path = parts[0]
    while "/" in path:
        path = path.rpartition("/")[0]
        yield path
