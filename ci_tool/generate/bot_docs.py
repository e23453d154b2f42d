"""The context of docs/bot.md (templates/bot.md.j2): the bot's tables as rows of plain strings. Pure.

Every fact comes from the table that owns it: commands and flags from bot/flags.py, selection steps and the
flags a stage list makes moot from stages/selection_request.py, labels from stages/approvals.py, what each engine
does with a run option from stages/engines.py, permissions from bot/authorize.py. The examples are parsed here, so
each result shown is what the parser says today.
"""

from __future__ import annotations

import json

from ci_tool.bot.authorize import ASSOCIATIONS, LISTS_GRANTING
from ci_tool.bot.flags import COMMANDS, CONFLICTS, FLAGS, Arg, Flag, Permission, SubCommand
from ci_tool.bot.grammar import parse_comment
from ci_tool.bot.help import value_rules
from ci_tool.bot.parsed_comment import BotSyntaxError
from ci_tool.layout import ALLOWLIST_PATH
from ci_tool.stages.approvals import LABEL_RULES
from ci_tool.stages.engines import HANDLING, REUSE_ID
from ci_tool.stages.selection_request import REPLACED_BY_STAGE_LIST, STEP_EFFECTS, RunMode, Step, flag_name

# Comments shown in docs/bot.md with what they parse to; among them comments posted on TensorRT-LLM pull requests.
EXAMPLES: tuple[str, ...] = (
    "/bot run",
    '/bot run --disable-fail-fast --stage-list "DGX_H100-PyTorch-1, A30-AutoDeploy-1"',
    '/bot run  --disable-fail-fast --stage-list "\\*GB300\\*PerfSanity\\*"',
    '/bot run --stage-list "DGX_B200-4_GPUs-Verl-Post-Merge-1" to start the ci',
    '/bot run --disable-reuse-test --detailed-log --stage-list "A10-PyTorch-2"',
    '/bot run --reuse-test 1234 --gpu-type "A30, H100_PCIe"',
    '/bot skip --comment "waive only"',
    "/bot run --post-merge -disable-fail-fast",
    '/bot run --stage-list ""',
    "/bot run --multi-gpu-test",
    "/bot skip",
)
# What each run mode selects: a job sets it (CI's REQUEST `run_mode`, `ci-tool run --run-mode`), no comment does.
RUN_MODE_EFFECTS: tuple[tuple[RunMode, str], ...] = (
    (RunMode.FULL, "the selection the flags make (a pull request's, or a post-merge run's)"),
    (RunMode.NIGHTLY_RELEASE, "the package-sanity stages only (a nightly release validation)"),
    (RunMode.RELEASE_CHECK, "the non-test stages only: the docs build and package sanity (a release branch's check)"),
)


def bot_docs_context(_source: object = None) -> dict[str, object]:
    """The rows of every table of docs/bot.md. `_source` (the catalog a target renders from) is unused:
    the bot's tables are the same for every catalog."""
    return {
        "commands": [{"usage": c.usage, "permission": str(c.permission or "anyone"), "help": c.help} for c in COMMANDS],
        "flags": [_flag_row(flag) for flag in FLAGS],
        "stage_list_step": Step.STAGE_LIST.value,
        "steps_before_stage_list": Step.STAGE_LIST.value - 1,
        "extra_stage_step": Step.EXTRA_STAGE.value,
        "value_rules": value_rules(),
        "conflicts": [{"first": c.first, "second": c.second, "reason": c.reason} for c in CONFLICTS],
        "moot_flags": ", ".join(f"`{flag_name(key)}`" for key in REPLACED_BY_STAGE_LIST),
        "handling": [
            {"flag": _handled_flag(key), "engine": engine.value, "support": handling.support.value,
             "line": handling.line}
            for engine, options in HANDLING.items()
            for key, handling in options.items()
        ],
        "labels": [{"label": label, "rule": rule} for label, rule in LABEL_RULES],
        "allowlist_path": ALLOWLIST_PATH,
        "permissions": [_permission_row(permission, associations) for permission, associations in ASSOCIATIONS.items()],
        "examples": [{"comment": comment, "result": _parsed(comment)} for comment in EXAMPLES],
        "run_modes": [{"mode": mode.value, "effect": effect} for mode, effect in RUN_MODE_EFFECTS],
        "run_mode_step": Step.RUN_MODE.value,
    }


def _flag_row(flag: Flag) -> dict[str, str]:
    return {
        "usage": f"`/bot {flag.command}` `{flag.usage}`" if flag.command is not SubCommand.RUN else f"`{flag.usage}`",
        "value": _arg_text(flag),
        "key": flag.key,
        "step": f"{flag.feeds.value}: {STEP_EFFECTS[flag.feeds]}" if flag.feeds else "none (run option)",
        "custom": "yes" if flag.custom_run else "",
        "help": flag.help,
    }


def _handled_flag(key: str) -> str:
    return f"{flag_name('reuse_test')} ID" if key == REUSE_ID else flag_name(key)


def _arg_text(flag: Flag) -> str:
    if flag.arg is Arg.LIST:
        return "list, `*` globs" if flag.globs else ("list of " + ", ".join(flag.choices) if flag.choices else "list")
    return {Arg.SWITCH: "none", Arg.OPTIONAL_ID: "optional pipeline id", Arg.TEXT: "quoted text"}[flag.arg]


def _permission_row(permission: Permission, associations: tuple[str, ...]) -> dict[str, str]:
    return {
        "permission": permission.value,
        "commands": ", ".join(f"`/bot {c.name}`" for c in COMMANDS if c.permission is permission),
        "associations": ", ".join(associations),
        "entries": ", ".join(f"`{entry}`" for entry in LISTS_GRANTING[permission]),
    }


def _parsed(comment: str) -> str:
    """What `comment` parses to as JSON, or the column and headline of its error."""
    try:
        return json.dumps(parse_comment(comment).to_json())
    except BotSyntaxError as error:
        return f"column {error.col}: {error.headline}"
