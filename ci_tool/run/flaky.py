"""Known flaky failures: a small signature file (flaky_signatures.yml beside this module) of output
patterns, and the check that decides whether a failed test earns its one rerun.

    file       := "version: 1" "signatures:" signature+
    signature  := name (a-z0-9-), pattern (Python regex), why (one line)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from ci_tool.errors import RunError, Where, did_you_mean
from ci_tool.run.junit import CaseResult
from ci_tool.text_file import read_text
from ci_tool.yaml_nodes import compose

DEFAULT_SIGNATURES = Path(__file__).with_name("flaky_signatures.yml")
_KEYS = ("name", "pattern", "why")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class FlakySignature:
    name: str
    pattern: re.Pattern[str]
    why: str


def load_flaky_signatures(path: str | Path = DEFAULT_SIGNATURES) -> tuple[FlakySignature, ...]:
    """Read and validate a signature file."""
    file = Path(path)
    text = read_text(file, name="the flaky signatures", error=RunError)
    node = compose(text, file=str(file), error=RunError)  # bounded whatever its aliases (yaml_nodes)
    try:
        data = None if node is None else yaml.SafeLoader("").construct_document(node)
    except yaml.MarkedYAMLError as error:  # a value YAML cannot build (`? [a]: 1`, a bad `!!binary`)
        mark = error.problem_mark
        where = Where(str(file), mark.line + 1, mark.column + 1) if mark else Where(str(file))
        raise RunError(f"expected YAML values, found: {error.problem}", where=where) from None
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("signatures"), list):
        raise RunError(
            "expected a mapping with `version: 1` and a `signatures:` list",
            where=Where(str(file)),
            hint="see ci_tool/run/flaky_signatures.yml for the format",
        )
    return tuple(_signature(item, index, file) for index, item in enumerate(data["signatures"]))


def _signature(item: object, index: int, file: Path) -> FlakySignature:
    where = Where(str(file), yaml_path=f"signatures[{index}]")
    if not isinstance(item, dict):
        raise RunError(f"expected a mapping with {', '.join(_KEYS)}, found {item!r}", where=where)
    for key in item:
        if key not in _KEYS:
            raise RunError(
                f"expected only the keys {', '.join(_KEYS)}, found {key!r}", where=where, hint=did_you_mean(key, _KEYS)
            )
    values = {key: item.get(key) for key in _KEYS}
    missing = [key for key, value in values.items() if not isinstance(value, str) or not value.strip()]
    if missing:
        raise RunError(f"expected a non-empty string for {', '.join(missing)}, found {item!r}", where=where)
    name, pattern, why = (str(values[key]) for key in _KEYS)
    if not _NAME.fullmatch(name):
        raise RunError(f"expected a name of lower-case words joined by '-', found {name!r}", where=where)
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise RunError(f"expected a regular expression, found {pattern!r} ({error})", where=where) from None
    return FlakySignature(name, compiled, why)


def match_flaky(case: CaseResult, signatures: Sequence[FlakySignature]) -> FlakySignature | None:
    """The first known flaky signature found in a failed test's report or captured output."""
    if not case.is_failure:
        return None
    output = "\n".join((case.message, case.text, case.stdout, case.stderr))
    return next((signature for signature in signatures if signature.pattern.search(output)), None)
