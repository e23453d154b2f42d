"""The planner tests' catalog, test-db and durations (test_plan.py, test_planner.py; the `db` fixture in
tests/ci_tool/stages/conftest.py loads the test-db)."""

from __future__ import annotations

DURATIONS = {"t/a.py": 600.0, "t/b.py": 300.0, "t/c.py": 200.0, "t/d.py": 100.0, "t/fp8.py": 50.0}


CATALOG = """\
version: 1
families:
- {name: A10-PyTorch, platform: a10, context: l0_x, splits: 2}
- {name: A10-PyTorch-Post-Merge, platform: a10, context: l0_x, splits: 1}
"""


TEST_DB = """\
version: 0.0.1
l0_x:
- condition:
    terms: {stage: pre_merge}
  tests:
  - t/a.py
  - t/b.py ISOLATION
  - t/c.py
  - t/d.py
- condition:
    terms: {stage: pre_merge, supports_fp8: true}
  tests:
  - t/fp8.py
  - t/a.py TIMEOUT (90)
- condition:
    terms: {stage: post_merge}
  tests:
  - t/post.py
l0_empty:
- condition:
    wildcards: {gpu: '*h200*'}
  tests:
  - t/h200.py
"""
