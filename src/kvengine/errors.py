"""kvengine's own errors: one base class, one subclass per domain, each rendered as one line.

A message says what was expected and what was found (with numbers); `hint` names the knob to turn.
kvengine does not import ci_tool, so it keeps its own small hierarchy with the same rendering.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class KvEngineError(Exception):
    """Base of every error kvengine reports to a user (the CLI maps it to exit code 1)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} Hint: {self.hint}" if self.hint else self.message


class SpecError(KvEngineError):
    """A model spec (YAML file or preset name) that is malformed or unknown."""


class ConfigError(KvEngineError):
    """A KvCacheConfig, runtime limit or command-line value outside its valid range."""


class SizingError(KvEngineError):
    """A budget that can never hold the pools' floors (one max-length request, the constraints)."""


class CacheError(KvEngineError):
    """A misuse of the block bookkeeping: double free, shrinking history, a closed cache."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`valid: a, b, c` plus the closest choices, for unknown-name hints."""
    valid = sorted(choices)
    close = difflib.get_close_matches(name, valid, n=2, cutoff=0.6)
    text = "valid: " + ", ".join(valid)
    if close:
        text = "did you mean " + " or ".join(repr(c) for c in close) + "? " + text
    return text
