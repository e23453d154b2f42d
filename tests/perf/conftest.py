"""Perf-sanity tests record and gate through ci-tool's `perf_sanity` fixture: the stage's mode decides."""

from ci_tool.perf.fixture import perf_sanity  # noqa: F401  (a pytest fixture)
