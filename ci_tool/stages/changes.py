"""A pull request's change as change-based selection reads it, and the filter a narrowed stage runs its list
through. Pure: the commands read git and the files (commands/changes.py).

    ChangeSet   the changed paths; the deleted ones; and, when a base revision is known, each changed
                test-db file (lists and waives) as it is at the base and as it is now
    LineFilter  which lines of a stage's render a narrowed stage runs, and how each is cut down:

        a rendered line whose test path lies under a narrowing path runs as it is;
        a rendered line whose test path holds a narrowing path runs just that path, with the line's
          `-k`/`-m` filters and markers (TIMEOUT, ISOLATION) kept: `tests/a TIMEOUT (20)` narrowed
          to tests/a/test_x.py runs `tests/a/test_x.py TIMEOUT (20)`;
        a rendered line that is an added or changed test-db entry (context, line as written) runs as it is.

    A narrowing path scoped to one GPU (a removed `full:A10/...` waive) narrows only that GPU's stages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ci_tool.testdb.check import covers
from ci_tool.testdb.lines import TestLine

_FILTER_START = re.compile(r"\s-[km](?=\s|$)")


@dataclass(frozen=True)
class ChangeSet:
    """What a change touches. `base` and `now` hold the changed test-db files' texts (None: the file does not
    exist there); `base` is None when no base revision was given, so rules that compare cannot decide."""

    files: tuple[str, ...]
    test_db_dir: str = "test-db"  # repository-relative, no trailing "/"
    deleted: frozenset[str] = frozenset()
    base: Mapping[str, str | None] | None = None
    now: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class NarrowPath:
    """A test path a narrowed stage runs (a file, folder or node id, maybe with `-k`/`-m`)."""

    path: str
    gpu: str | None = None  # only on stages of this GPU token


@dataclass(frozen=True)
class LineFilter:
    """The lines a narrowed stage keeps of its render (see the module docstring)."""

    paths: tuple[NarrowPath, ...] = ()
    entries: tuple[tuple[str, str], ...] = ()  # (context, line as written)

    def apply(self, rendered: Sequence[TestLine], *, context: str, gpu: str | None) -> tuple[TestLine, ...]:
        """The lines of `rendered` (context `context`, a stage of GPU token `gpu`) to run, in list order."""
        entries = {raw for where, raw in self.entries if where == context}
        paths = [found.path for found in self.paths if found.gpu is None or found.gpu == gpu]
        kept: list[TestLine] = []
        for line in rendered:
            kept.extend([line] if line.raw in entries else narrowed_line(line, paths))
        return tuple(dict.fromkeys(kept))


def split_filters(test_id: str) -> tuple[str, str]:
    """A test id's path and its `-k`/`-m` tail: `tests/a -m "not gpu"` -> (`tests/a`, ` -m "not gpu"`)."""
    start = _FILTER_START.search(test_id)
    return (test_id, "") if start is None else (test_id[: start.start()].strip(), test_id[start.start() :])


def narrowed_line(line: TestLine, paths: Sequence[str]) -> list[TestLine]:
    """What of `line` runs for the narrowing `paths`: the line itself, the paths it holds, or nothing."""
    selector, filters = split_filters(line.test_id)
    found: list[TestLine] = []
    for path in paths:
        target, target_filters = split_filters(path)
        if covers(target, selector):
            return [line]  # the whole line lies under the path
        if covers(selector, target):
            if filters and target_filters:
                return [line]  # two filters do not combine; the line is the safe superset
            test_id = target + (filters or target_filters)
            found.append(replace(line, test_id=test_id, raw=test_id + line.raw[len(line.test_id) :]))
    return found
