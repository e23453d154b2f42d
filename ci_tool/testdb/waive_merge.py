"""The effective waives of a pull request (as TensorRT-LLM's CI merges them): its own file, plus the target
branch tip's waives, minus the waives the pull request removed, so a stale branch does not fail on tests the target
branch has waived since, and an unwaive in the pull request is honoured. Pure: texts in, text out.

    merged = the PR's file as written
           + each tip waive line that the PR's file lacks and that the PR did not remove
             (removed = a waive of the merge base's file the PR's file no longer holds)

Lines are compared as waives (GPU scope and test id), so a tip line that only rewords the reason of a waive
the PR holds is not added twice. Blank and comment lines of the tip are not carried over.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tool.errors import Where
from ci_tool.testdb.waives import Waive, parse_waive_line
from ci_tool.text_file import lines

WaiveKey = tuple[str | None, str]  # (GPU scope, test id)
MERGED_HEADER = "# merged from the target branch tip (ci-tool testdb merge-waives)"


@dataclass(frozen=True)
class MergedWaives:
    """The merged file's text and what the merge did, for the command to say."""

    text: str
    added: tuple[str, ...]  # tip lines the PR lacked
    dropped: tuple[str, ...]  # tip lines the PR removed

    def summary(self, base: str) -> str:
        """One line for people: what the merge took from the target branch `base` and what it left out."""
        return (
            f"merged waives: {len(self.added)} line(s) added from {base}, "
            f"{len(self.dropped)} left out that this change removes"
        )


def merge_waives(pr: str, tip: str, base: str, *, files: tuple[str, str, str]) -> MergedWaives:
    """Merge the PR's waives text with the tip's, given the merge base's (see the module docstring).
    `files`: how the three texts are named in errors (PR, tip, base). A malformed line raises."""
    pr_keys = {key for _, keys in _waive_lines(pr, files[0]) for key in keys}
    removed = {key for _, keys in _waive_lines(base, files[2]) for key in keys} - pr_keys
    added: list[str] = []
    dropped: list[str] = []
    for text, keys in _waive_lines(tip, files[1]):
        if keys <= pr_keys:
            continue  # the PR holds it already
        (dropped if keys & removed else added).append(text)
        pr_keys |= keys
    merged = pr
    if added:
        merged += ("\n" if merged and not merged.endswith("\n") else "") + MERGED_HEADER + "\n"
        merged += "".join(f"{line}\n" for line in added)
    return MergedWaives(merged, tuple(added), tuple(dropped))


def _waive_lines(text: str, file: str) -> list[tuple[str, frozenset[WaiveKey]]]:
    """Each waive line of a text, stripped, with the waives it holds; blank and comment lines left out."""
    found: list[tuple[str, frozenset[WaiveKey]]] = []
    for number, line in enumerate(lines(text), start=1):
        waives = parse_waive_line(line, Where(file, number, 1))
        if waives:
            found.append((line.strip(), frozenset(_key(waive) for waive in waives)))
    return found


def _key(waive: Waive) -> WaiveKey:
    return (waive.gpu, waive.test_id)
