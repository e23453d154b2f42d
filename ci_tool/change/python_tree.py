"""A Python source text as a syntax tree, or why it cannot be read as one. Pure: a text in, a tree or a
reason out. The one place ci-tool parses Python source: the units of a file (units.py) and what it loads
(change/import_reach.py) both read it through here.

    parses        an ast.Module
    does not      `Unreadable("does not parse as Python")`: a syntax error, a NUL byte
    too deep      `Unreadable("nests expressions too deeply ...")`: an expression nested deeper
                  than CPython's parser or its tree builder can hold (`- - - ... 1` 100k deep, `a.a.a...`);
                  the parser reports it as a MemoryError (its own stack is full) or a RecursionError (3.11
                  builds the Python tree recursively). Python itself cannot import such a file either, so
                  it is judged as one that does not parse: conservatively, never by a guess.
    too large     `Unreadable("is larger than 1 MiB of source ...")`: reading one costs time and memory in
                  proportion (a 10 MB file: minutes and gigabytes); such a file, generated as a rule, is
                  judged conservatively too.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass

DOES_NOT_PARSE = "does not parse as Python"
TOO_DEEP = "nests expressions too deeply for Python's parser"
MAX_SOURCE_CHARS = 2**20
TOO_LARGE = f"is larger than {MAX_SOURCE_CHARS // 2**20} MiB of source (too large to read unit by unit)"


@dataclass(frozen=True)
class Unreadable:
    """Why a source text cannot be read as a Python syntax tree (one of the reasons above)."""

    why: str  # a predicate: "<the file> {why}"


def parse_python(text: str) -> ast.Module | Unreadable:
    """The syntax tree of `text`, or why there is none (see the module docstring)."""
    if len(text) > MAX_SOURCE_CHARS:
        return Unreadable(TOO_LARGE)
    try:
        with warnings.catch_warnings():  # a user's `"\d"` or `1if x` is theirs to hear about, not this reader's
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            return ast.parse(text)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte in the source
        return Unreadable(DOES_NOT_PARSE)
    except (MemoryError, RecursionError):  # the parser's stack, or 3.11's recursive tree builder, ran out
        return Unreadable(TOO_DEEP)
