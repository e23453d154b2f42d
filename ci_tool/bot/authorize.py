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
own author.  Parsing is pure (text in, value out); the command reads the file. The keys are a field table
(yaml_fields.py): unknown keys get a did-you-mean hint, and every problem of the file is reported at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from yaml.nodes import Node, ScalarNode, SequenceNode

from ci_tool.bot.flags import Permission, SubCommand, command_of
from ci_tool.errors import BotError
from ci_tool.layout import ALLOWLIST_PATH
from ci_tool.yaml_fields import Field, read_fields
from ci_tool.yaml_nodes import NodeKind, NodeReader, compose, kind

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
    """Parse allowlist YAML; a BotError lists every problem (file:line:col and key path) at once."""
    root = compose(text, file=file, error=BotError)
    if root is None:
        return Allowlist()
    reader = NodeReader(file, BotError)
    what = f"a mapping of {KEYS} to logins"
    found = read_fields(reader, root, "", what, ALLOWLIST_FIELDS, repeated_hint="merge the two lists")
    reader.raise_all()
    assert found is not None  # raise_all raised otherwise
    return Allowlist(**{key: found.get(key, frozenset) or frozenset() for key in ALLOWLIST_KEYS})


def _logins(reader: NodeReader, node: Node, path: str) -> frozenset[str] | None:
    """A list of GitHub logins, in lower case (None, and a problem for each bad or repeated login)."""
    if not isinstance(node, SequenceNode):
        reader.mismatch(node, path, "a list of GitHub logins", f"write {path}: [login-one, login-two]")
        return None
    before = len(reader.problems)
    logins: set[str] = set()
    for index, item in enumerate(node.value):
        login = _login(reader, item, f"{path}[{index}]")
        if login is not None and login.lower() in logins:
            reader.problem(item, f"{path}[{index}]", f"login {login!r} listed twice under {path!r}")
        elif login is not None:
            logins.add(login.lower())
    return frozenset(logins) if len(reader.problems) == before else None


def _login(reader: NodeReader, node: Node, path: str) -> str | None:
    text = node.value if kind(node) is NodeKind.STR else None
    if text is not None and _LOGIN.fullmatch(text):
        return text
    reader.mismatch(node, path, "a GitHub login", _login_hint(node, text))
    return None


def _login_hint(node: Node, text: str | None) -> str | None:
    """How to write a refused login: without its '@', or quoted when YAML read it as a number (`1234`)."""
    if text is not None and text.startswith("@"):
        return f"write {text[1:]!r} without the '@'"
    if text is None and isinstance(node, ScalarNode) and _LOGIN.fullmatch(node.value):
        return f"quote it: {node.value!r}"
    return None


# `key:` alone (null) lists nobody, like `key: []`
ALLOWLIST_FIELDS = tuple(Field(key, _logins, nullable=True) for key in ALLOWLIST_KEYS)


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
