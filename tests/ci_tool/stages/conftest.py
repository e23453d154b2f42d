"""The planner tests' test-db (tests/helpers/plan_catalog.py): one list, l0_x, loaded once per module."""

from __future__ import annotations

import pytest

from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.model import TestDb
from tests.helpers.plan_catalog import TEST_DB


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> TestDb:
    folder = tmp_path_factory.mktemp("test-db")
    (folder / "l0_x.yml").write_text(TEST_DB)
    return load_test_db(folder)
