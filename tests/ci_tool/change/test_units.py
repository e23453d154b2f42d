"""Source units (change/units.py): which unit a line runs in, and which units a change edits."""

from __future__ import annotations

import dataclasses
import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.change import python_tree
from ci_tool.change.python_tree import DOES_NOT_PARSE, TOO_DEEP, Unreadable
from ci_tool.change.units import Hunk, SourceUnits, UnitChange, changed_units, parse_hunks, source_units

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
        ([3, 18], {"<module>", "maybe", "Pool.take.check"}),  # LIMIT: read by `if LIMIT:` and by maybe()
    ],
    ids=["body", "header", "one-line-def", "binding-and-unit"],
)
def test_an_edit_changes_the_units_of_its_lines(lines: list[int], edited: set[str]) -> None:
    assert units().edited_by(lines) == edited


@pytest.mark.parametrize("text", ["def f(:\n", "x = 1\0\n"], ids=["syntax-error", "nul-byte"])
def test_a_text_that_does_not_parse_has_no_units(text: str) -> None:
    assert source_units(text) == Unreadable(DOES_NOT_PARSE)


DEEP = {  # nested deeper than CPython's parser (a MemoryError) or 3.11's tree builder (a RecursionError) holds
    "negations": "_D = " + "-" * 100_000 + "1\n",
    "nots": "_D = " + "not " * 100_000 + "1\n",
    "attributes": "_D = a" + ".a" * 100_000 + "\n",
    "lambdas": "_D = " + "lambda: " * 5_000 + "1\n",
}


@pytest.mark.parametrize("deep", list(DEEP.values()), ids=list(DEEP))
def test_a_text_nested_too_deeply_for_the_parser_has_no_units_and_says_so(deep: str) -> None:
    assert source_units(deep) == Unreadable(TOO_DEEP)


@pytest.mark.parametrize("side", ["base", "head"])
@pytest.mark.parametrize("deep", list(DEEP.values()), ids=list(DEEP))
def test_a_change_of_a_file_nested_too_deeply_is_undecided(deep: str, side: str) -> None:
    base, head = (BASE + deep, BASE) if side == "base" else (BASE, BASE + deep)
    expected = UnitChange(undecided=f"it nests expressions too deeply for Python's parser at the {side}")
    assert changed_units(base, head, _hunks(base, head)) == expected


_PYTHONISH = st.lists(
    st.sampled_from([*"()[]{}:=.,-+*~ \n\t\"'#\\@01ax", "not ", "lambda ", "def ", "if "]), max_size=60
).map("".join)


@settings(max_examples=300, deadline=None)
@given(base=_PYTHONISH, head=_PYTHONISH, depth=st.integers(0, 3_000), prefix=st.sampled_from(["-", "not ", "~", "a."]))
def test_any_change_maps_to_units_or_says_why_not(base: str, head: str, depth: int, prefix: str) -> None:
    """Whatever the texts, a change maps to units or to names other files read (a module-level `a=1` edits no
    unit and exports `a`), or is undecided with a reason: never an exception."""
    head = head + prefix * depth + "1\n"
    change = changed_units(base, head, _hunks(base, head))
    assert change.undecided or change.units or change.exported or change == UnitChange()


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
    # a def nested in a function runs only inside it: the function's edit holds it, so it is not new
    "new-nested-def": (
        "def a():\n    return 1\n",
        "def a():\n    def inner():\n        return 1\n\n    return inner()\n",
        UnitChange(("a", "a.inner")),
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
    "hash-in-a-string": (
        'f("""\n""")\n' + BASE,
        'f("""\n# not a comment\n""")\n' + BASE,
        UnitChange(("<module>",)),
    ),
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
    "wrapped-signature": (
        "import functools\n\n\n@functools.cache\n" + BASE,
        "import functools\n\n\n@functools.cache\n" + BASE.replace("def one():", "def one(n=1):"),
        UnitChange(("one",)),
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


READS = "def one():\n    return 1\n\n\ndef two():\n    return _LIMIT + 2\n"
KERNELS = """\
import triton


@triton.jit
def _inner(x):
    return x + 1


@triton.jit
def _kernel(x):
    return _inner(x)


def launch(x):
    return _kernel[(1,)](x)
"""
SHAPE = """\
import dataclasses


@dataclasses.dataclass(frozen=True)
class _Shape:
    \"\"\"A shape.\"\"\"

    n: int


def two():
    return _Shape(2)
"""
BINDINGS = {
    # a statement that only binds names edits the units that read them
    "private-constant": (
        "_LIMIT = 2\n\n\n" + READS,
        "_LIMIT = 3\n\n\n" + READS,
        UnitChange(("two",), through=("two",)),
    ),
    "public-constant": (
        "_LIMIT = LIMIT = 2\n\n\n" + READS,
        "_LIMIT = LIMIT = 3\n\n\n" + READS,
        UnitChange(("two",), exported=("LIMIT",), through=("two",)),
    ),
    "read-through-a-binding": (
        "_BASE = 1\n_LIMIT = _BASE + 1\n\n\n" + READS,
        "_BASE = 2\n_LIMIT = _BASE + 1\n\n\n" + READS,
        UnitChange(("two",), through=("two",)),
    ),
    "read-at-import": (
        "_LIMIT = 2\nprint(_LIMIT)\n\n\n" + READS,
        "_LIMIT = 3\nprint(_LIMIT)\n\n\n" + READS,
        UnitChange(("<module>", "two"), through=("<module>", "two")),
    ),
    "value-with-a-call": ("_LIMIT = int(2)\n\n\n" + READS, "_LIMIT = int(3)\n\n\n" + READS, UnitChange(("<module>",))),
    "all": ('__all__ = ["one"]\n' + BASE, '__all__ = ["one", "two"]\n' + BASE, UnitChange(("<module>",))),
    "unread-constant": ("_UNUSED = 2\n" + BASE, "_UNUSED = 3\n" + BASE, UnitChange()),
    "import-added": (
        BASE,
        "import os\n" + BASE.replace("return 2", "return os.sep"),
        UnitChange(("two",)),
    ),
    "import-changed": (
        "from os import sep as _LIMIT\n\n\n" + READS,
        "from os import pathsep as _LIMIT\n\n\n" + READS,
        UnitChange(("two",), through=("two",)),
    ),
    # a class statement that only binds its name (dataclass, builtin or own bases, fields, defs) is a binding
    "dataclass-field": (
        SHAPE,
        SHAPE.replace("    n: int\n", "    n: int\n    m: int = 0\n"),
        UnitChange(("two",), through=("two",)),
    ),
    "public-class": (
        SHAPE.replace("_Shape", "Shape"),
        SHAPE.replace("_Shape", "Shape").replace('"""A shape."""', '"""A shape, sized."""'),
        UnitChange(("two",), exported=("Shape",), through=("two",)),
    ),
    "unknown-base": (
        "class P(Base):\n    x = 1\n",
        "class P(Base):\n    x = 2\n",
        UnitChange(("<module>",)),
    ),
    # a new class no base code names, with its methods, is free
    "new-class": (
        BASE,
        BASE.replace("return 2", "return _Two().run()") + "\n\nclass _Two:\n    def run(self):\n        return 2\n",
        UnitChange(("_Two.run", "two")),
    ),
    "docstring": ('"""One."""\n' + BASE, '"""One, two."""\n' + BASE, UnitChange()),
    # a compiled def's edit is its launchers' too, and theirs
    "kernel-body": (
        KERNELS,
        KERNELS.replace("x + 1", "x + 2"),
        UnitChange(("_inner", "_kernel", "launch"), through=("_kernel", "launch")),
    ),
    "public-kernel": (
        KERNELS.replace("_kernel", "kernel"),
        KERNELS.replace("_kernel", "kernel").replace("return _inner(x)", "return _inner(x) * 2"),
        UnitChange(("kernel", "launch"), exported=("kernel",), through=("launch",)),
    ),
    # a new kernel no base code names is free: only its launchers (edited here) reach it
    "new-kernel": (
        KERNELS.replace("@triton.jit\ndef _inner(x):\n    return x + 1\n\n\n", "").replace("_inner(x)", "x + 1"),
        KERNELS,
        UnitChange(("_inner", "_kernel", "launch"), through=("launch",)),
    ),
}


@pytest.mark.parametrize(("base", "head", "expected"), list(BINDINGS.values()), ids=list(BINDINGS))
def test_a_binding_or_a_kernel_edits_the_units_that_read_it(base: str, head: str, expected: UnitChange) -> None:
    assert changed_units(base, head, _hunks(base, head)) == expected


def test_an_init_file_exports_what_it_imports() -> None:
    base, head = "from os import sep\n", "from os import sep, pathsep\n"
    assert changed_units(base, head, _hunks(base, head), package_init=True).exported == ("pathsep", "sep")
    assert changed_units(base, head, _hunks(base, head)).exported == ()


def _hunks(base: str, head: str) -> tuple[Hunk, ...]:
    """The -U0 hunks of base -> head, as difflib finds them (git's agree on these small texts)."""
    found = []
    matcher = difflib.SequenceMatcher(a=base.splitlines(), b=head.splitlines(), autojunk=False)
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag != "equal":
            found.append(Hunk(range(a1 + 1, a2 + 1), range(b1 + 1, b2 + 1)))
    return tuple(found)


READER = """\
from __future__ import annotations

import m
from m import N as M

_ALIAS = m.N


def by_import():
    return M


def by_attribute():
    return m.N


def through_a_binding():
    return _ALIAS


def annotated(x: M) -> None:
    return None


def elsewhere():
    return 1
"""


def test_another_files_readers_of_a_name_are_found_every_way_it_reads_it() -> None:
    units = source_units(READER)
    assert units is not None
    assert units.readers_elsewhere({"N"}) == {"by_import", "by_attribute", "through_a_binding"}
    public = source_units(READER + "\nALIAS = m.N\n")  # other files may read ALIAS: unseen, so <module>
    assert public is not None and "<module>" in public.readers_elsewhere({"N"})


def test_a_removed_public_name_is_unbound() -> None:
    base, head = "LIMIT = 2\n\n\ndef two():\n    return 2\n", "def two():\n    return 2\n"
    assert changed_units(base, head, _hunks(base, head)).unbound == ("LIMIT",)


class _Scans(tuple):  # type: ignore[type-arg]
    """A tuple that counts how often it is walked through: what an index saves is a walk a lookup."""

    scans = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        self.scans += 1
        return super().__iter__()


def test_following_a_chain_of_bindings_walks_them_a_few_times_not_once_a_name() -> None:
    """An edit that adds many module-level statements was quadratic here (8,000 of them: 8.6 s, now 1.5 s)."""
    chain = (
        "_B0 = 1\n" + "".join(f"_B{i} = _B{i - 1} + 1\n" for i in range(1, 300)) + "\n\ndef f():\n    return _B299\n"
    )
    found = source_units(chain)
    assert isinstance(found, SourceUnits)
    counted = _Scans(found.bindings)
    found = dataclasses.replace(found, bindings=counted)
    assert found.readers(["_B0"]) == {"f"}
    assert counted.scans <= 2


def test_an_edit_of_many_lines_walks_the_defs_a_few_times_not_once_a_line() -> None:
    text = "".join(f"def f{i}(x=1):\n    return x\n\n\n" for i in range(300))
    found = source_units(text)
    assert isinstance(found, SourceUnits)
    counted = _Scans(found.defs)
    found = dataclasses.replace(found, defs=counted)
    assert found.edits(range(1, 4 * 300)) == ({"<module>", *(f"f{i}" for i in range(300))}, set())
    assert counted.scans <= 3


def test_a_change_of_a_file_larger_than_the_cap_is_undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading a file unit by unit costs time and memory in proportion: a 10 MB one took minutes and 2 GB."""
    monkeypatch.setattr(python_tree, "MAX_SOURCE_CHARS", 1000)
    head = BASE + "".join(f"_V{i} = {i}\n" for i in range(200))
    assert changed_units(BASE, head, _hunks(BASE, head)) == UnitChange(
        undecided="it is larger than 1 MiB of source (too large to read unit by unit) at the head"
    )
