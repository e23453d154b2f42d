"""ci-tool: CI orchestration and test-list management for GPU projects."""

__version__ = "0.1.0"
