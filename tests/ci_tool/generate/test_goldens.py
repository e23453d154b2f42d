"""Golden files: each small catalog's generated files equal the expected copies beside it.

A mismatch prints a unified diff; `pytest --update-goldens` rewrites the expected copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ci_tool.generate.targets import CATALOG_TARGETS
from tests.helpers.generate import REPOSITORY_BUILD

if TYPE_CHECKING:
    from tests.helpers.golden import Golden

HERE = Path(__file__).resolve().parent
CATALOG_NAMES = sorted(path.parent.name for path in (HERE / "catalogs").glob("*/stages.yml"))


@pytest.mark.parametrize("target", [target.path for target in CATALOG_TARGETS], ids=lambda path: Path(path).name)
@pytest.mark.parametrize("catalog", CATALOG_NAMES)
def test_generated_file_matches_its_golden_copy(generated: dict, catalog: str, target: str, golden: Golden) -> None:
    golden(HERE / "catalogs" / catalog / "expected" / Path(target).name, generated[catalog].files[target])


def test_generation_is_deterministic(generated: dict) -> None:
    from ci_tool.generate.context import generate_input
    from ci_tool.generate.targets import generate_files
    from ci_tool.stages.catalog_load import open_catalog

    catalogs = HERE / "catalogs"
    again = generate_files(
        generate_input(open_catalog(catalogs / "small" / "stages.yml", catalogs / "test-db").catalog, REPOSITORY_BUILD)
    )
    assert again == generated["small"].files
