"""Property: whatever a catalog file holds, loading gives a Catalog or our StageError, never another exception."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import StageError
from ci_tool.stages.catalog import Catalog
from ci_tool.stages.catalog_load import FAMILY_KEYS, TOP_KEYS, parse_catalog
from ci_tool.testdb.load import load_test_db

CATALOGS = Path(__file__).parent / "catalogs"
DB = load_test_db(CATALOGS / "test-db")

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
    ]
)
KEYS = st.sampled_from([*TOP_KEYS, *FAMILY_KEYS, "paths", "stages", "margin", "minimum_minutes", "familes"])


@st.composite
def family(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.sampled_from(FAMILY_KEYS), min_size=1, max_size=6, unique=True))
    return "- {" + ", ".join(f"{key}: {draw(SCALARS)}" for key in keys) + "}"


@st.composite
def catalog_text(draw: st.DrawFn) -> str:
    lines = [f"version: {draw(st.sampled_from(['1', '2', 'x']))}"]
    for key in draw(st.lists(KEYS, max_size=3, unique=True)):
        lines.append(f"{key}: {draw(SCALARS)}")
    lines.append("families:")
    lines += draw(st.lists(family(), min_size=0, max_size=4))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.text(max_size=20)))
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None)
@given(catalog_text())
def test_any_catalog_loads_or_raises_our_error(text: str) -> None:
    try:
        catalog = parse_catalog(text, file="stages.yml", db=DB, durations={})
    except StageError as error:
        assert "\n" not in str(error)  # one line
    else:
        assert isinstance(catalog, Catalog)
