"""The registry of generated CI files: where each goes and how it is rendered from the catalog.

Add a generated file by adding a row; `ci-tool generate`, `--check` and the golden tests read this table
(`ci-tool generate` adds the files rendered from other sources, such as docs/bot.md from the bot's tables).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
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
    render: Callable[[GenerateInput], str]


def _template(
    template: str, build_context: Callable[[GenerateInput], dict[str, object]]
) -> Callable[[GenerateInput], str]:
    """A renderer: `template` (a file under ci_tool/generate/templates) over the builder's context."""

    return lambda source: render(template, build_context(source))


TARGETS: tuple[Target, ...] = (
    Target("jenkins/L0_Test.groovy", _template("L0_Test.groovy.j2", jenkins_test_context)),
    Target("jenkins/L0_MergeRequest.groovy", _template("L0_MergeRequest.groovy.j2", jenkins_merge_request_context)),
    Target(".github/workflows/l0-test.yml", _template("l0-test.yml.j2", github_context)),
)


def generate_files(source: GenerateInput, targets: Iterable[Target] = TARGETS) -> dict[str, str]:
    """Every target's text, keyed by its path, in registry order."""
    return {target.path: target.render(source) for target in targets}
