"""The registry of generated files: where each goes, its template and its context builder.

Add a generated file by adding a row; `ci-tool generate`, `--check` and the golden tests read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ci_tool.generate.context import (
    GenerateInput,
    github_context,
    jenkins_merge_request_context,
    jenkins_test_context,
)
from ci_tool.generate.render import render


@dataclass(frozen=True)
class Target:
    path: str  # relative to the repository root, with '/'
    template: str  # a file under ci_tool/generate/templates
    build_context: Callable[[GenerateInput], dict[str, object]]


TARGETS: tuple[Target, ...] = (
    Target("jenkins/L0_Test.groovy", "L0_Test.groovy.j2", jenkins_test_context),
    Target("jenkins/L0_MergeRequest.groovy", "L0_MergeRequest.groovy.j2", jenkins_merge_request_context),
    Target(".github/workflows/l0-test.yml", "l0-test.yml.j2", github_context),
)


def generate_files(source: GenerateInput) -> dict[str, str]:
    """Every target's text, keyed by its path, in registry order."""
    return {target.path: render(target.template, target.build_context(source)) for target in TARGETS}
