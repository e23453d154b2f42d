"""The registry of generated files: where each goes and how it is rendered (from the catalog, or the bot's
tables).

Add a generated file by adding a row; `ci-tool generate` and `--check` read TARGETS. The CI files depend on
the catalog, so the golden tests render CATALOG_TARGETS for each golden catalog; docs/bot.md is the same for
every catalog (the bot's tables), and its committed copy is its golden file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ci_tool.generate.bot_docs import bot_docs_context
from ci_tool.generate.context import (
    GenerateInput,
    github_context,
    jenkins_merge_request_context,
    jenkins_test_context,
)
from ci_tool.generate.render import render
from ci_tool.layout import BOT_DOCS_PATH


@dataclass(frozen=True)
class Target:
    path: str  # relative to the repository root, with '/'
    render: Callable[[GenerateInput], str]


def _template(
    template: str, build_context: Callable[[GenerateInput], Mapping[str, object]]
) -> Callable[[GenerateInput], str]:
    """A renderer: `template` (a file under ci_tool/generate/templates) over the builder's context."""

    return lambda source: render(template, build_context(source))


CATALOG_TARGETS: tuple[Target, ...] = (
    Target("jenkins/L0_Test.groovy", _template("L0_Test.groovy.j2", jenkins_test_context)),
    Target("jenkins/L0_MergeRequest.groovy", _template("L0_MergeRequest.groovy.j2", jenkins_merge_request_context)),
    Target(".github/workflows/l0-test.yml", _template("l0-test.yml.j2", github_context)),
)
TARGETS: tuple[Target, ...] = (*CATALOG_TARGETS, Target(BOT_DOCS_PATH, _template("bot.md.j2", bot_docs_context)))


def generate_files(source: GenerateInput, targets: Iterable[Target] = CATALOG_TARGETS) -> dict[str, str]:
    """Every target's text, keyed by its path, in registry order."""
    return {target.path: target.render(source) for target in targets}
