"""The waives file: tests to skip, with a reason, optionally only on one GPU family.

    waive := ["full:" GPU "/"] test_id [test_id ...] " SKIP" [" (" reason ")"] [comment]
    reason := text that may hold an issue link and end in `until YYYY-MM-DD` (waive_terms.py)

`GPU` is a stage's GPU token (`A10` in `A10-PyTorch-1`) and must equal it exactly; TensorRT-LLM's CI
matched it as a substring, so `full:A100/` also applied to A10 stages. Several space-separated paths
on one line (without `-k`/`-m`) waive each of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ci_tool.errors import TestDbError, Where
from ci_tool.testdb.lines import LineStatus, parse_test_line, strip_comment
from ci_tool.testdb.waive_terms import WaiveTerms, parse_terms
from ci_tool.text_file import lines, read_text

_GPU_SCOPE = re.compile(r"full:([^/\s]+)/")
_FILTER = re.compile(r"\s-[km]\s")


@dataclass(frozen=True)
class Waive:
    test_id: str
    gpu: str | None  # None: every GPU
    reason: str | None
    where: Where

    def applies_to(self, gpu_token: str | None) -> bool:
        return self.gpu is None or self.gpu == gpu_token

    @property
    def terms(self) -> WaiveTerms:
        """The issue link and expiry its reason carries (checked when the line was parsed)."""
        return parse_terms(self.reason)


def parse_waive_line(text: str, where: Where) -> list[Waive]:
    """The waives one line holds (none for blank and comment lines)."""
    if not strip_comment(text).strip():
        return []
    body = text.strip()
    gpu = None
    scope = _GPU_SCOPE.match(body)
    if scope:
        gpu, body = scope.group(1), body[scope.end() :]
    line = parse_test_line(body, where)
    if line.status is not LineStatus.SKIP or line.timeout_minutes is not None or line.isolation:
        raise TestDbError(
            f"expected `<test id> SKIP (<reason>)`, found {text.strip()!r}",
            where=where,
            hint="a waive skips a test: end the line with SKIP (https://your-tracker/123)",
        )
    parse_terms(line.reason, where, line=text)  # a malformed `until` is this line's error, not a later one
    ids = [line.test_id] if _FILTER.search(f" {line.test_id} ") else line.test_id.split()
    return [Waive(test_id, gpu, line.reason, where) for test_id in ids]


def parse_waives(text: str, file: str) -> tuple[list[Waive], list[TestDbError]]:
    """Every waive in a file's text, and every malformed line (parsing goes on past them)."""
    waives: list[Waive] = []
    problems: list[TestDbError] = []
    for number, text_line in enumerate(lines(text), start=1):
        try:
            waives.extend(parse_waive_line(text_line, Where(file, number, 1)))
        except TestDbError as error:
            problems.append(error)
    return waives, problems


def read_waives(path: str | Path) -> tuple[list[Waive], list[TestDbError]]:
    """Read a waives file; a missing file holds no waives."""
    file = Path(path)
    if not file.exists():
        return [], []
    return parse_waives(read_text(file, name="the waives file", error=TestDbError), str(file))


def load_waives(path: str | Path) -> list[Waive]:
    """Read a waives file and raise its first malformed line."""
    waives, problems = read_waives(path)
    if problems:
        raise problems[0]
    return waives


def waive_line(test_id: str, reason: str) -> str | None:
    """The waives line `<test_id> SKIP (<reason>)`, when it reads back as exactly that one waive; None for
    an id the grammar cannot hold (a blank or ` #` inside it, a marker word)."""
    line = f"{test_id} SKIP ({reason})"
    try:
        parsed = parse_waive_line(line, Where("<generated>"))
    except TestDbError:
        return None
    return line if [(w.test_id, w.gpu, w.reason) for w in parsed] == [(test_id, None, reason)] else None


def waives_for_gpu(waives: Iterable[Waive], gpu_token: str | None) -> list[Waive]:
    """The waives that apply on stages of one GPU family."""
    return [waive for waive in waives if waive.applies_to(gpu_token)]
