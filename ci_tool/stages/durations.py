"""Test durations: pytest-split's `.test_durations` JSON (test id -> seconds), and estimates per list entry.

A list entry is a node id, a file or folder, or either of those with `-k`/`-m`; durations are recorded
per node id (and sometimes per whole entry). The estimate of an entry is, first match wins:

    1. its own recorded duration (`unittest/_torch/modeling -k "gemma3"` may be recorded as is);
    2. the recorded duration of its path, the entry up to the first blank (`-k`/`-m` dropped);
    3. the sum over recorded ids under that path (`path/...`, `path::...`, `path[...]`), counting an id
       only when no shorter recorded id above it is counted already (no double counting);
    4. the median of the estimates found by 1-3 for this list's entries in its nearest folder (the entry's
       own folder, else the one above, ...), else of the whole list's, or 1.0 when none was found.

Rule 4 prices an unknown entry by its neighbours: a list that mixes second-long unit tests with hour-long
perf cases (TensorRT-LLM's do) would price every unknown unit-test file at the perf cases' mean under
pytest-split's rule (the mean of all known durations), and a CPU stage's derived timeout would run to
many hours. The median keeps one slow neighbour from pricing a whole folder.

To that each entry adds its per-process cost: what running it costs beyond its tests' own time (the
interpreter, imports, collection), learnt from the history (`ci-tool durations export`) and kept in the
same file under `process-cost:<entry>` (no test id starts so, and pytest-split ignores ids it does not
collect). An entry with no recorded cost gets the mean of the list's recorded ones, or 0 when none is.

parse_durations reads the file by hand, not through typed_json: it is pytest-split's format, shared with
TensorRT-LLM, whose keys are thousands of free-form test ids, so there is no class to declare; each value's
range is checked as it is read, and an error names its test id.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tool.errors import ShardError, Where, shown
from ci_tool.json_file import describe_json, parse_json
from ci_tool.testdb.lines import MAX_TIMEOUT_MINUTES
from ci_tool.text_file import read_text

Durations = Mapping[str, float]
MAX_SECONDS = MAX_TIMEOUT_MINUTES * 60  # no test runs longer than the longest TIMEOUT; sums of these stay finite
_CHILD_SEPARATORS = ("/", "::", "[")
PROCESS_COST_PREFIX = "process-cost:"


def process_cost_key(entry: str) -> str:
    """The durations-file key of a list entry's per-process cost."""
    return PROCESS_COST_PREFIX + entry


def parse_durations(text: str, *, source: str = "<durations>") -> dict[str, float]:
    """Parse `.test_durations` JSON; every value must be a number of seconds from 0 to MAX_SECONDS."""
    data = parse_json(text, file=source, error=ShardError)
    if not isinstance(data, dict):
        raise ShardError(
            f"expected a JSON object of test id -> seconds, found a JSON {type(data).__name__}",
            where=Where(source),
            hint='write it as {"path/test_x.py::test_y": 12.5, ...}',
        )
    durations: dict[str, float] = {}
    for test_id, seconds in data.items():
        number = isinstance(seconds, int | float) and not isinstance(seconds, bool)
        if not number or seconds < 0:
            raise ShardError(
                f"expected a number of seconds >= 0 for {shown(test_id)}, found {describe_json(seconds)}",
                where=Where(source),
            )
        if seconds > MAX_SECONDS:
            raise ShardError(
                f"expected at most {MAX_SECONDS} seconds (a week) for {shown(test_id)}, found {seconds!r}",
                where=Where(source),
            )
        durations[test_id] = float(seconds)
    return durations


def load_durations(path: str | Path) -> dict[str, float]:
    """Read and parse a `.test_durations` file."""
    return parse_durations(read_text(path, name="the durations file", error=ShardError), source=str(path))


@dataclass(frozen=True)
class Estimates:
    """Estimated seconds for each entry of one list; `unknown` entries were priced by rule 4, whose last
    resort is `mean_seconds` (the median of the list's known entries: the middle one, not an average)."""

    seconds: Mapping[str, float]
    unknown: frozenset[str]
    mean_seconds: float


class _Index:
    """Recorded ids sorted for prefix lookups."""

    def __init__(self, durations: Durations) -> None:
        self.durations = durations
        self.keys = sorted(key for key in durations if not key.startswith(PROCESS_COST_PREFIX))

    def under(self, path: str) -> list[str]:
        """Recorded ids strictly under `path`, without ids nested under another one of them."""
        found: list[str] = []
        for separator in _CHILD_SEPARATORS:
            prefix = path + separator
            start = bisect.bisect_left(self.keys, prefix)
            end = bisect.bisect_left(self.keys, prefix + "\U0010ffff")
            found.extend(self.keys[start:end])
        counted = set(found)
        return [key for key in found if not any(parent in counted for parent in _parents(key, len(path)))]

    def lookup(self, entry: str) -> float | None:
        if entry in self.durations:
            return self.durations[entry]
        path = entry.split(" ", 1)[0]
        if path in self.durations:
            return self.durations[path]
        children = self.under(path)
        return math.fsum(self.durations[key] for key in children) if children else None


def _parents(key: str, floor: int) -> list[str]:
    """The prefixes of `key` that end before a separator, longer than `floor` characters."""
    parents = []
    for index in range(floor + 1, len(key)):
        if key.startswith(_CHILD_SEPARATORS, index) or key[index] == " ":
            parents.append(key[:index])
    return parents


def estimate_seconds(test_ids: Sequence[str], durations: Durations) -> Estimates:
    """Estimated seconds for every entry of a test list (see the module docstring for the rules)."""
    index = _Index(durations)
    known: dict[str, float] = {}
    for test_id in test_ids:
        found = index.lookup(test_id)
        if found is not None:
            known[test_id] = found
    unknown = frozenset(t for t in test_ids if t not in known)
    priced = _NeighbourPrices(known)
    costs = process_costs(test_ids, durations)
    seconds = {t: (known[t] if t in known else priced.of(t)) + costs[t] for t in test_ids}
    return Estimates(seconds, unknown, priced.whole)


class _NeighbourPrices:
    """Rule 4: the median known estimate of an entry's nearest folder that has one, else the list's."""

    def __init__(self, known: Mapping[str, float]) -> None:
        by_folder: dict[str, list[float]] = {}
        for entry, seconds in known.items():
            for folder in _folders(entry):
                by_folder.setdefault(folder, []).append(seconds)
        self.medians = {folder: statistics.median(values) for folder, values in by_folder.items()}
        self.whole = statistics.median(known.values()) if known else 1.0

    def of(self, entry: str) -> float:
        return next((self.medians[f] for f in _folders(entry) if f in self.medians), self.whole)


def _folders(entry: str) -> list[str]:
    """The folders an entry's path lies in, nearest first: `a/b/t.py::x -k y` -> ['a/b/', 'a/']."""
    path = entry.split(" ", 1)[0].split("::", 1)[0]
    parts = path.split("/")[:-1]
    return ["/".join(parts[:depth]) + "/" for depth in range(len(parts), 0, -1)]


def process_costs(test_ids: Sequence[str], durations: Durations) -> dict[str, float]:
    """Each entry's per-process cost (see the module docstring)."""
    recorded = {t: durations[key] for t in test_ids if (key := process_cost_key(t)) in durations}
    mean = math.fsum(recorded.values()) / len(recorded) if recorded else 0.0
    return {t: recorded.get(t, mean) for t in test_ids}
