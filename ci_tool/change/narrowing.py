"""The filter a narrowed stage runs its list through: the narrowing paths the change-based rules find
(stages/cbts.py, touched_rule.py) and the test-db entries a change adds. Pure.

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
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ci_tool.testdb.check import covers
from ci_tool.testdb.lines import TestLine

_FILTER_START = re.compile(r"\s-[km](?=\s|$)")


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

    def to_json(self) -> dict[str, object]:
        """The filter as the run record carries it to the pipelines' stage jobs (record.py reads it back)."""
        return {
            "paths": [{"path": found.path, "gpu": found.gpu} for found in self.paths],
            "entries": [{"context": context, "line": raw} for context, raw in self.entries],
        }

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
    """What of `line` runs for the narrowing `paths`: the line itself, the paths it holds, or nothing; a path
    another of them already runs (a node id of a file that runs whole with the same filter) is left out, so
    the plan predicts each test once."""
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
    return [one for one in found if not any(_runs_within(one.test_id, other.test_id) for other in found)]


def _runs_within(test_id: str, other: str) -> bool:
    """Whether the line `other` runs every test the different line `test_id` runs: its path holds the path of
    `test_id`, and its filter is none or the same."""
    path, filters = split_filters(test_id)
    other_path, other_filters = split_filters(other)
    return test_id != other and covers(other_path, path) and other_filters.strip() in ("", filters.strip())
