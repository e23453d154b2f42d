"""`testdb check --collect`: one real `pytest --collect-only` over every id of every context."""

from __future__ import annotations

import shutil
from pathlib import Path

from ci_tool.testdb.collect import uncollectable_tests
from ci_tool.testdb.load import load_test_db

FAILING_SUITE = Path(__file__).parents[2] / "fixtures" / "failing_suite"

TEST_DB = """\
version: 0.0.1
l0_one:
- condition: {terms: {stage: pre_merge}}
  tests:
  - cases/case_basic.py::test_pass
  - cases/case_basic.py::test_gone TIMEOUT (5)
  - cases/case_basic.py -m "gpu4"
l0_two:
- condition: {}
  tests:
  - cases/case_basic.py::test_gone
  - cases/missing_folder ISOLATION
  - cases/case_basic.py::TestGroup -k "gamma"
  - cases/case_waived.py
"""


def test_uncollectable_ids_point_at_every_entry(tmp_path: Path) -> None:
    root = shutil.copytree(FAILING_SUITE, tmp_path / "suite")
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    (db_dir / "l0.yml").write_text(TEST_DB)
    errors = uncollectable_tests(load_test_db(db_dir), rootdir=root)
    hint = " Hint: fix the id (pytest node id, file or folder, relative to the project root), or delete the line if the test is gone"  # noqa: E501
    found = [(error.where.line if error.where else None, error.message) for error in errors]
    assert found == [
        (6, "expected 'cases/case_basic.py::test_gone' to collect at least one test, found none (collected no test)"),
        (11, "expected 'cases/case_basic.py::test_gone' to collect at least one test, found none (collected no test)"),
        (12, "expected 'cases/missing_folder' to collect at least one test, found none (no such file or folder)"),
        (
            13,
            "expected 'cases/case_basic.py::TestGroup -k \"gamma\"' to collect at least one test, "
            "found none (no collected test matches -k 'gamma')",
        ),
    ]
    assert str(errors[0]) == f"{db_dir}/l0.yml:6:5 (l0_one[0].tests[1]): {errors[0].message}" + hint


def test_nothing_to_collect_in_an_empty_db(tmp_path: Path) -> None:
    (tmp_path / "l0.yml").write_text("version: 0.0.1\nl0_x: []\n")
    assert uncollectable_tests(load_test_db(tmp_path), rootdir=tmp_path) == []
