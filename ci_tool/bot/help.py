"""`/bot help`, rendered from the flag table (flags.py) and the rule tables it feeds, and the value rules
docs/bot.md shares with it.

docs/bot.md is generated from the same tables (ci_tool/generate/bot_docs.py, templates/bot.md.j2):
`ci-tool generate` writes it and `ci-tool generate --check` fails when the committed copy is stale.
"""

from __future__ import annotations

from ci_tool.bot.flags import COMMANDS, DEBUG_FLAG, DEBUG_NEEDS, FLAGS, Arg, SubCommand, flags_of
from ci_tool.layout import BOT_DOCS_PATH
from ci_tool.stages.approvals import LABEL_RULES


def _custom_flags() -> str:
    return ", ".join(f"`{flag.name}`" for flag in FLAGS if flag.custom_run)


def value_rules() -> list[str]:
    """The rules every flag value follows, one sentence each (`/bot help` and docs/bot.md)."""
    globbers = " and ".join(f"`{flag.name}`" for flag in FLAGS if flag.globs)
    texts = " and ".join(f"`{flag.usage}`" for flag in FLAGS if flag.arg is Arg.TEXT)
    return [
        'List values are one double-quoted, comma-separated string: `--stage-list "A10-PyTorch-1, DGX_H100-*"`. '
        "Items are trimmed; markdown escapes such as `\\_` and `\\*` are fine (backslashes are dropped). "
        f"Only {globbers} take `*` globs.",
        f"Quoted text ({texts}) runs to the last double quote on the line: quotes inside it are kept.",
        "Invisible characters (zero-width spaces, U+FEFF, bidi controls) in the command line are errors "
        "that name the character; no-break spaces are blanks.",
        f"`{DEBUG_FLAG}` needs exactly one exact stage name in `{DEBUG_NEEDS}`.",
        f"Custom runs cannot turn the merge gate green: {_custom_flags()}.",
    ]


def render_help() -> str:
    """The markdown reply to `/bot help`: commands, flags of run, value rules, labels."""
    lines = ["#### `/bot` commands", "", "| Command | What it does |", "|---|---|"]
    lines += [f"| `{c.usage}` | {c.help} |" for c in COMMANDS]
    lines += ["", "#### Flags of `/bot run`", "", "| Flag | What it does |", "|---|---|"]
    lines += [f"| `{flag.usage}` | {flag.help} |" for flag in flags_of(SubCommand.RUN)]
    lines += ["", *value_rules(), ""]
    lines += [f"The label `{label}` is needed for {rule}." for label, rule in LABEL_RULES]
    lines += ["", f"Only the first line of a comment is read. Full reference: `{BOT_DOCS_PATH}`."]
    return "\n".join(lines) + "\n"
