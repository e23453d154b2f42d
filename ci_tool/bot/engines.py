"""Where a project's `/bot run`, `/bot kill` and `/bot reuse-pipeline` act: Jenkins, GitHub Actions, or both.
Chosen in one place, the bot's setting CI_TOOL_BOT_ENGINES (`bot handle --engines`; docs/generated-pipelines.md,
"GitHub Actions only"): a comma-separated list of `jenkins` and `github`, `jenkins` when unset. Pure.

    jenkins   L0_MergeRequest triggered, its statuses on `Jenkins Full Build` / `Custom Jenkins build`
    github    l0-test.yml dispatched, its statuses on `L0 Test Full Run` / `Custom L0 Test run`

`/bot skip` sets the full context of every engine chosen: the merge gate a project requires is one of them.
"""

from __future__ import annotations

from ci_tool.bot.status import ACTIONS_FULL_CONTEXT, FULL_BUILD_CONTEXT
from ci_tool.errors import BotError, did_you_mean
from ci_tool.stages.engines import Engine

BOT_ENGINES: dict[str, Engine] = {"jenkins": Engine.JENKINS, "github": Engine.GITHUB}
DEFAULT_BOT_ENGINES = (Engine.JENKINS,)
FULL_CONTEXTS = {Engine.JENKINS: FULL_BUILD_CONTEXT, Engine.GITHUB: ACTIONS_FULL_CONTEXT}


def parse_bot_engines(text: str, *, where: str) -> tuple[Engine, ...]:
    """`jenkins`, `github` or `jenkins,github` (spaces allowed) -> the engines, in that order."""
    words = [word.strip().lower() for word in text.split(",") if word.strip()]
    if not words:
        return DEFAULT_BOT_ENGINES
    for word in words:
        if word not in BOT_ENGINES:
            hint = did_you_mean(word, list(BOT_ENGINES)) or "write jenkins, github, or jenkins,github for both"
            raise BotError(f"{where}: expected jenkins, github or both (jenkins,github), found {word!r}", hint=hint)
    return tuple(engine for name, engine in BOT_ENGINES.items() if name in words)


def skip_contexts(engines: tuple[Engine, ...]) -> tuple[str, ...]:
    """The contexts `/bot skip` turns green: each chosen engine's full run."""
    return tuple(FULL_CONTEXTS[engine] for engine in engines)
