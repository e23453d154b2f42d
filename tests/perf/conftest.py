"""Perf-sanity tests gate through ci-tool's `perf_gate` fixture: the stage's mode decides fail or warn."""

from ci_tool.perf_gate import perf_gate  # noqa: F401  (a pytest fixture)
