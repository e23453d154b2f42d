"""A run's stages go into the history (and its report) in the catalog's order, whatever order they end in.

Stages that run side by side (`ci-tool run --jobs`) end in any order; each stage's records wait until every
stage before it has been recorded, so the run's stage rows, its report and its summary table read as a serial
run's. With one stage at a time every record is written as it comes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


class CatalogOrder:
    """Runs each stage's recording in the order of `names` (`add`), and what is left at the end (`flush`)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.position = {name: index for index, name in enumerate(names)}
        self.waiting: dict[int, Callable[[], None]] = {}
        self.next = 0

    def add(self, name: str, record: Callable[[], None]) -> None:
        """Record stage `name` now when every stage before it is recorded, else once they are."""
        position = self.position.get(name)
        if position is None:  # not among the run's stages: nothing to wait for
            record()
            return
        self.waiting[position] = record
        while self.next in self.waiting:
            self.waiting.pop(self.next)()
            self.next += 1

    def flush(self) -> None:
        """Record what still waits (the run ended before some stages did), in order."""
        for position in sorted(self.waiting):
            self.waiting.pop(position)()
