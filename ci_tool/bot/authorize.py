"""Who may drive CI from PR comments: the GitHub author association plus a small allowlist in the repository.

Each sub-command names a permission in the flag table (flags.COMMANDS):

    run        /bot run, /bot reuse-pipeline    OWNER, MEMBER, COLLABORATOR, or listed under `run` or `kill_skip`
    kill_skip  /bot kill, /bot skip              OWNER, MEMBER, or listed under `kill_skip`
    (none)     /bot help                         anyone

The allowlist (`.github/ci-bot-allowlist.yml`) holds GitHub logins, compared case-insensitively:

    run: [some-contributor]
    kill_skip: [release-manager]
    approve: [ci-approver]

`approve` names no sub-command: it lists who may grant the approval labels (pr_bot/labels.py), which no
author association grants.

The workflow reads it from the default branch, never from the pull request, so a PR cannot list its
own author.  Parsing is pure (text in, value out); the command reads the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from ci_tool.bot.flags import Permission, SubCommand, command_of
from ci_tool.errors import BotError, Where, did_you_mean
from ci_tool.layout import ALLOWLIST_PATH
from ci_tool.yaml_nodes import NodeKind, compose, kind

APPROVE_KEY = "approve"  # who may apply the approval labels (pr_bot/labels.py); not a sub-command's permission
ALLOWLIST_KEYS = (*(permission.value for permission in Permission), APPROVE_KEY)
KEYS = ", ".join(repr(key) for key in ALLOWLIST_KEYS[:-1]) + f" and {ALLOWLIST_KEYS[-1]!r}"  # 'run', ... and ...

# permission -> author associations that hold it without being listed
ASSOCIATIONS: dict[Permission, tuple[str, ...]] = {
    Permission.RUN: ("OWNER", "MEMBER", "COLLABORATOR"),
    Permission.KILL_SKIP: ("OWNER", "MEMBER"),
}
# permission -> allowlist entries that grant it (kill_skip is the stronger one)
LISTS_GRANTING: dict[Permission, tuple[Permission, ...]] = {
    Permission.RUN: (Permission.RUN, Permission.KILL_SKIP),
    Permission.KILL_SKIP: (Permission.KILL_SKIP,),
}

# GitHub logins: letters, digits and single inner dashes, at most 39 characters.
_LOGIN = re.compile(r"[A-Za-z0-9](?:-?[A-Za-z0-9]){0,38}")


@dataclass(frozen=True)
class Allowlist:
    """The parsed allowlist: per entry (`run`, `kill_skip`, `approve`), the listed logins in lower case."""

    run: frozenset[str] = frozenset()
    kill_skip: frozenset[str] = frozenset()
    approve: frozenset[str] = frozenset()

    def lists(self, entry: Permission) -> frozenset[str]:
        return self.run if entry is Permission.RUN else self.kill_skip


@dataclass(frozen=True)
class Authorization:
    """Whether `login` may run a sub-command; `via` says how (for logs), `permission` what it needed."""

    allowed: bool
    permission: Permission | None
    via: str


def parse_allowlist(text: str, *, file: str = ALLOWLIST_PATH) -> Allowlist:
    """Parse allowlist YAML; raise BotError (file:line:col and key path) on anything unexpected."""
    root = compose(text, file=file, error=BotError)
    if root is None:
        return Allowlist()
    if not isinstance(root, yaml.MappingNode):
        raise BotError(
            f"expected a mapping of {KEYS} to logins, found {_kind(root)}", where=_where(file, root)
        )
    entries: dict[str, frozenset[str]] = {}
    for key_node, value_node in root.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else _kind(key_node)
        if key not in ALLOWLIST_KEYS:
            hint = did_you_mean(str(key), list(ALLOWLIST_KEYS)) or f"the keys are {KEYS}"
            raise BotError(f"unknown key {key!r}", where=_where(file, key_node), hint=hint)
        if key in entries:
            raise BotError(f"key {key!r} given twice", where=_where(file, key_node), hint="merge the two lists")
        entries[key] = _logins(value_node, key, file)
    return Allowlist(
        run=entries.get(Permission.RUN.value, frozenset()),
        kill_skip=entries.get(Permission.KILL_SKIP.value, frozenset()),
        approve=entries.get(APPROVE_KEY, frozenset()),
    )


def _logins(node: yaml.Node, key: str, file: str) -> frozenset[str]:
    if kind(node) is NodeKind.NULL:
        return frozenset()
    if not isinstance(node, yaml.SequenceNode):
        raise BotError(
            f"expected a list of GitHub logins, found {_kind(node)}",
            where=_where(file, node, key),
            hint=f"write {key}: [login-one, login-two]",
        )
    logins: set[str] = set()
    for index, item in enumerate(node.value):
        path = f"{key}[{index}]"
        value = item.value if kind(item) is NodeKind.STR else None
        if value is None or not _LOGIN.fullmatch(value):
            found = repr(value) if value is not None else _kind(item)
            hint = f"write {value[1:]!r} without the '@'" if value and value.startswith("@") else None
            if value is None and isinstance(item, yaml.ScalarNode) and _LOGIN.fullmatch(item.value):
                hint = f"quote it: {item.value!r}"
            raise BotError(f"expected a GitHub login, found {found}", where=_where(file, item, path), hint=hint)
        if value.lower() in logins:
            raise BotError(f"login {value!r} listed twice under {key!r}", where=_where(file, item, path))
        logins.add(value.lower())
    return frozenset(logins)


def _where(file: str, node: yaml.Node, path: str | None = None) -> Where:
    return Where(file, node.start_mark.line + 1, node.start_mark.column + 1, path)


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return repr(node.value)


def permission_of(command: SubCommand) -> Permission | None:
    """The permission a sub-command needs (None: anyone may use it, e.g. help)."""
    return command_of(command).permission


def authorize(allowlist: Allowlist, *, command: SubCommand, login: str, association: str) -> Authorization:
    """Whether the comment's author may run `command` (association as GitHub reports it)."""
    permission = permission_of(command)
    if permission is None:
        return Authorization(True, None, "needs no permission")
    if association.upper() in ASSOCIATIONS[permission]:
        return Authorization(True, permission, f"author association {association.upper()}")
    for entry in LISTS_GRANTING[permission]:
        if login.lower() in allowlist.lists(entry):
            return Authorization(True, permission, f"listed under {entry.value!r} in {ALLOWLIST_PATH}")
    return Authorization(False, permission, f"author association {association.upper()} and not listed")
