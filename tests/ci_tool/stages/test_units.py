"""Source units (stages/units.py): which unit a line runs in, and which units a change edits."""

from __future__ import annotations

import difflib

import pytest

from ci_tool.stages.units import Hunk, SourceUnits, UnitChange, changed_units, parse_hunks, source_units

SOURCE = """\
import functools

LIMIT = 4


@functools.cache
def top(x):
    return x + 1


class Pool:
    size = 2

    def take(
        self, n
    ):
        def check(m):
            return m <= self.size
        return check(n)

    async def wait(self): return 1


if LIMIT:
    def maybe():
        return LIMIT
else:
    def maybe():
        return 0
try:
    import json
except ImportError:
    def fallback():
        return None
"""


def units() -> SourceUnits:
    found = source_units(SOURCE)
    assert found is not None
    return found


LINES = {
    "import": (1, "<module>"),
    "constant": (3, "<module>"),
    "decorator": (6, "<module>"),  # a decorator runs at import
    "def": (7, "<module>"),  # so does the def line
    "body": (8, "top"),
    "class-body": (12, "<module>"),
    "signature": (14, "<module>"),  # a multi-line signature
    "signature-end": (16, "<module>"),
    "nested-def": (17, "Pool.take"),  # the nested def's line runs in the outer body
    "nested-body": (18, "Pool.take.check"),
    "after-nested": (19, "Pool.take"),
    "one-line": (21, "Pool.wait"),  # a one-line def: its line is the body's
    "if-branch": (26, "maybe"),
    "else-branch": (29, "maybe"),
    "except-branch": (34, "fallback"),
}


@pytest.mark.parametrize(("line", "unit"), list(LINES.values()), ids=list(LINES))
def test_a_line_runs_in_the_innermost_function_body_that_holds_it(line: int, unit: str) -> None:
    assert units().unit_at(line) == unit


def test_the_names_are_every_function_and_the_module() -> None:
    assert units().names == {"<module>", "top", "Pool.take", "Pool.take.check", "Pool.wait", "maybe", "fallback"}


@pytest.mark.parametrize(
    ("lines", "edited"),
    [
        ([8], {"top"}),
        ([7], {"<module>"}),
        ([21], {"Pool.wait", "<module>"}),  # a one-line def's line is its header too
        ([3, 18], {"<module>", "Pool.take.check"}),
    ],
    ids=["body", "header", "one-line-def", "two-units"],
)
def test_an_edit_changes_the_units_of_its_lines(lines: list[int], edited: set[str]) -> None:
    assert units().edited_by(lines) == edited


@pytest.mark.parametrize("text", ["def f(:\n", "x = 1\0\n"], ids=["syntax-error", "nul-byte"])
def test_a_text_that_does_not_parse_has_no_units(text: str) -> None:
    assert source_units(text) is None


DIFF = """\
diff --git a/src/a.py b/src/a.py
--- a/src/a.py
+++ b/src/a.py
@@ -2 +2 @@ def one():
-    return 1
+    return 10
@@ -5,0 +6,3 @@ def two():
+
+def three():
+    return 3
@@ -7,2 +9,0 @@
"""


def test_hunks_give_the_removed_and_added_lines() -> None:
    assert parse_hunks(DIFF) == (
        Hunk(range(2, 3), range(2, 3)),
        Hunk(range(5, 5), range(6, 9)),
        Hunk(range(7, 9), range(9, 9)),
    )


BASE = "def one():\n    return 1\n\n\ndef two():\n    return 2\n"
CASES = {
    "one-function": (BASE, BASE.replace("return 1", "return 10"), UnitChange(("one",))),
    # a new top-level function no base code names: free (its header and the blank lines edit no <module>)
    "free-function": (
        BASE,
        BASE + "\n\ndef three(n: int = 3):\n    def inner():\n        return n\n    return inner\n",
        UnitChange(("three", "three.inner")),
    ),
    "free-function-called": (
        BASE,
        BASE.replace("return 2", "return three()") + "\n\ndef three():\n    return 3\n",
        UnitChange(("three", "two")),
    ),
    # a name the base mentions (a use, here), a builtin's, a decorated def, a call in a default, an
    # `import *` at the base, a method: each may be reached by code the change does not edit
    "name-mentioned": (
        BASE + "X = three\n",
        BASE + "X = three\n\n\ndef three():\n    return 3\n",
        UnitChange(("<module>", "three"), ("three",)),
    ),
    "builtin-name": (BASE, BASE + "\n\ndef len(x):\n    return 3\n", UnitChange(("<module>", "len"), ("len",))),
    "decorated": (
        BASE,
        BASE + "\n\n@register\ndef three():\n    return 3\n",
        UnitChange(("<module>", "three"), ("three",)),
    ),
    "call-in-default": (
        BASE,
        BASE + "\n\ndef three(n=make()):\n    return n\n",
        UnitChange(("<module>", "three"), ("three",)),
    ),
    "star-import": (
        "from os import *\n" + BASE,
        "from os import *\n" + BASE + "\n\ndef three():\n    return 3\n",
        UnitChange(("<module>", "three"), ("three",)),
    ),
    "new-method": (
        "class P:\n    def a(self):\n        return 1\n",
        "class P:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n",
        UnitChange(("<module>", "P.b"), ("P.b",)),
    ),
    # inert lines: a comment or a blank line runs nothing; a comment-like line inside a string is code, and a
    # comment on the first two lines may declare the file's coding
    "comment-only": (
        BASE,
        BASE.replace("    return 2\n", "    # two, as ever\n    return 2\n\n# the end\n"),
        UnitChange(),
    ),
    "hash-in-a-string": ('S = """\n"""\n' + BASE, 'S = """\n# not a comment\n"""\n' + BASE, UnitChange(("<module>",))),
    "coding-line": (BASE, "# -*- coding: latin-1 -*-\n" + BASE, UnitChange(("<module>",))),
    "body-line": (BASE, BASE.replace("    return 2\n", "    x = 2\n    return x\n"), UnitChange(("two",))),
    # a plain header (no decorator, no call) of a def both sides have: the def's own edit; a rename unbinds
    # the old name (and `deux` is mentioned nowhere at the base: free, but the old name's loss is <module>)
    "signature": (BASE, BASE.replace("def two():", "def two(n=2):"), UnitChange(("two",))),
    "renamed": (BASE, BASE.replace("def two():", "def deux():"), UnitChange(("<module>", "deux"))),
    "decorated-signature": (
        "@cache\n" + BASE,
        "@cache\n" + BASE.replace("def one():", "def one(n=1):"),
        UnitChange(("<module>",)),
    ),
    "removed-function": (BASE, "def one():\n    return 1\n", UnitChange(("<module>", "two"))),  # its header too
    "added-file": (None, BASE, UnitChange(("<module>", "one", "two"), ("<module>", "one", "two"))),
    "removed-file": (BASE, None, UnitChange(("<module>", "one", "two"))),
    "head-broken": (BASE, "def one(:\n", UnitChange(undecided="it does not parse as Python at the head")),
}


@pytest.mark.parametrize(("base", "head", "expected"), list(CASES.values()), ids=list(CASES))
def test_a_change_edits_the_units_its_hunks_lie_in(base: str | None, head: str | None, expected: UnitChange) -> None:
    hunks = _hunks(base or "", head or "")
    assert changed_units(base, head, hunks) == expected


def _hunks(base: str, head: str) -> tuple[Hunk, ...]:
    """The -U0 hunks of base -> head, as difflib finds them (git's agree on these small texts)."""
    found = []
    matcher = difflib.SequenceMatcher(a=base.splitlines(), b=head.splitlines(), autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag != "equal":
            found.append(Hunk(range(a1 + 1, a2 + 1), range(b1 + 1, b2 + 1)))
    return tuple(found)
