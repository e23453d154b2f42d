"""Property: whatever a catalog file holds, loading gives a Catalog or our StageError, never another exception."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import StageError
from ci_tool.stages.catalog import Catalog
from ci_tool.stages.catalog_load import read_catalog
from ci_tool.stages.catalog_schema import FAMILY_KEYS, TOP_KEYS
from ci_tool.stages.durations import MAX_SECONDS, load_durations
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db

CATALOGS = Path(__file__).parent / "catalogs"
DB = load_test_db(CATALOGS / "test-db")
DURATIONS = load_durations(CATALOGS / "test-db" / ".test_durations")

SCALARS = st.sampled_from(
    [
        "A10-PyTorch",
        "CPU-Generic",
        "DGX_H100-4_GPUs-PyTorch",
        "H100_PCIe-PyTorch-Perf",
        "A10-Pytorch",
        "A10-PyTorch-1",
        "CPU-Build_Docs",
        "a10",
        "cpu",
        "dgx-h100-x1",
        "l0_x",
        "l0_h200",
        "l0_nope",
        "auto",
        "0",
        "1",
        "3",
        "-2",
        "1.5",
        "true",
        "no",
        "null",
        "~",
        "[]",
        "{}",
        "x86_64",
        "arm64",
        "docs/",
        "*.md",
        "'A*'",
        "DeepSeek",
        "PyTorch",
        # numbers YAML resolves but a program may not hold, explicit tags, hidden characters
        "07",
        "1:30",
        "1:30.5",
        "1" * 5000,
        "9223372036854775808",
        "2000",
        ".inf",
        "-.inf",
        ".nan",
        "1.0e+400",
        "1.0e+300",
        "1.0e-300",
        "1_000.5",
        "0x_",
        "!!int x",
        "!!float x",
        "!!bool maybe",
        "!!binary aGk=",
        "dgx-h100-x" + "9" * 5000,
        "a10-x0",
        '"a\\0b"',
        '"l0_x\\n"',
        '"\\u200b"',
    ]
)
KEYS = st.sampled_from([*TOP_KEYS, *FAMILY_KEYS, "paths", "stages", "margin", "minimum_minutes", "familes"])
TIMEOUT_KEYS = st.sampled_from(["margin", "minimum_minutes", "step_minutes"])
NUMBERS = st.sampled_from(["1", "2", "3", "1.5", "100", "10080", "1_0", "0x3", "+2"])  # all valid somewhere


@st.composite
def family(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.sampled_from(FAMILY_KEYS), min_size=1, max_size=6, unique=True))
    return "- {" + ", ".join(f"{key}: {draw(SCALARS)}" for key in keys) + "}"


@st.composite
def near_valid_family(draw: st.DrawFn) -> str:
    """A family that passes every check but the values `SCALARS` put in some of its keys (numbers, mostly)."""
    name, platform = draw(st.sampled_from([("A10-PyTorch", "a10"), ("DGX_H100-4_GPUs-PyTorch", "dgx-h100-x4")]))
    fields = {"name": name, "platform": platform, "context": "l0_x", "splits": draw(st.sampled_from(["1", "auto"]))}
    for key in draw(st.lists(st.sampled_from(["splits", "budget_minutes", "timeout_minutes"]), max_size=2)):
        fields[key] = draw(NUMBERS | NUMBERS | SCALARS)
    if fields["splits"] == "auto" and "budget_minutes" not in fields:
        fields["budget_minutes"] = draw(st.sampled_from(["10", "1.0e-300", "0.5", "10080"]))
    return "- {" + ", ".join(f"{key}: {value}" for key, value in fields.items()) + "}"


@st.composite
def catalog_text(draw: st.DrawFn) -> str:
    lines = [f"version: {draw(st.sampled_from(['1', '2', 'x']))}"]
    for key in draw(st.lists(KEYS, max_size=3, unique=True)):
        lines.append(f"{key}: {draw(SCALARS)}")
    if draw(st.booleans()):
        lines.append(f"timeouts: {{{draw(TIMEOUT_KEYS)}: {draw(SCALARS)}, {draw(TIMEOUT_KEYS)}: {draw(SCALARS)}}}")
    lines.append("families:")
    lines += draw(st.lists(family(), min_size=0, max_size=4))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.text(max_size=20)))
    return "\n".join(lines) + "\n"


@st.composite
def near_valid_catalog(draw: st.DrawFn) -> str:
    """A catalog that loads but for the odd numbers in its timeouts and families (so resolving runs too)."""
    timeouts = f"timeouts: {{margin: {draw(NUMBERS | NUMBERS | SCALARS)}, minimum_minutes: {draw(NUMBERS)}}}"
    families = draw(st.lists(near_valid_family(), min_size=1, max_size=2, unique_by=lambda text: text[:16]))
    return "\n".join(["version: 1", timeouts, "families:", *families]) + "\n"


DURATION_FILES = st.sampled_from([{}, DURATIONS, {"tests/a_test.py": MAX_SECONDS, "tests/b_test.py": 1e-300}])


def _check(text: str, durations: dict[str, float]) -> None:
    try:
        catalog = read_catalog(text, Planner(DB, durations), file="stages.yml")
    except StageError as error:
        # one line, or a headline and one line per problem
        assert str(error).count("\n") == len(error.problems) != 1
        assert all("\n" not in str(problem) for problem in error.problems)
    else:
        assert isinstance(catalog, Catalog)
        assert all(family.timeout_minutes > 0 and 1 <= family.splits <= 1000 for family in catalog.families)


@settings(max_examples=300, deadline=None)
@given(near_valid_catalog(), DURATION_FILES)
def test_any_numbers_in_a_catalog_load_or_raise_our_error(text: str, durations: dict[str, float]) -> None:
    _check(text, durations)


@settings(max_examples=300, deadline=None)
@given(catalog_text(), DURATION_FILES)
def test_any_catalog_loads_or_raises_our_error(text: str, durations: dict[str, float]) -> None:
    _check(text, durations)
