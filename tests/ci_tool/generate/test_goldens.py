"""Golden files: each small catalog's generated files equal the expected copies beside it.

A mismatch prints a unified diff; `pytest --update-goldens` rewrites the expected copies.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from ci_tool.generate.targets import TARGETS

HERE = Path(__file__).resolve().parent
CATALOG_NAMES = sorted(path.parent.name for path in (HERE / "catalogs").glob("*/stages.yml"))


@pytest.mark.parametrize("target", [target.path for target in TARGETS], ids=lambda path: Path(path).name)
@pytest.mark.parametrize("catalog", CATALOG_NAMES)
def test_generated_file_matches_its_golden_copy(
    generated: dict, catalog: str, target: str, update_goldens: bool
) -> None:
    golden = HERE / "catalogs" / catalog / "expected" / Path(target).name
    actual = generated[catalog].files[target]
    if update_goldens:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(actual, encoding="utf-8")
        return
    expected = golden.read_text(encoding="utf-8") if golden.exists() else ""
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True), actual.splitlines(keepends=True), str(golden), f"generated {target}"
        )
        pytest.fail(f"{golden} is not what {target} generates; run `pytest --update-goldens`\n" + "".join(diff))


def test_generation_is_deterministic(generated: dict) -> None:
    from ci_tool.generate.context import generate_input
    from ci_tool.generate.targets import generate_files
    from ci_tool.stages.catalog_load import open_catalog

    catalogs = HERE / "catalogs"
    again = generate_files(
        generate_input(open_catalog(catalogs / "small" / "stages.yml", catalogs / "test-db").catalog)
    )
    assert again == generated["small"].files
