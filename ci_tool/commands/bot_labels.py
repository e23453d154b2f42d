"""`ci-tool bot labels`: keep the approval labels honest (pr_bot/labels.py) for one GitHub event: add
`ci: full pre-merge approved` when an approver approves, remove an approval label someone else applied."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tool.layout import ALLOWLIST_PATH, GITHUB_API_URL, GITHUB_API_URL_ENV, GITHUB_TOKEN_ENV
from ci_tool.pr_bot.label_actions import GitHubReach, LabelInputs, guard_labels
from ci_tool.pr_bot.labels import DEFAULT_BOT_LOGIN


@click.command("labels")
@click.option(
    "--event",
    "event_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The pull_request_review, workflow_run or pull_request_target payload ($GITHUB_EVENT_PATH).",
)
@click.option(
    "--pull",
    "pull_text",
    metavar="N",
    help="With a workflow_run event: the pull request number the approval signal uploaded.",
)
@click.option(
    "--allowlist",
    "allowlist_path",
    default=ALLOWLIST_PATH,
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Who may approve: its `approve` logins.",
)
@click.option(
    "--bot-login", default=DEFAULT_BOT_LOGIN, show_default=True, help="The bot's own login: a label it applied stays."
)
@click.option(
    "--github-api-url",
    envvar=GITHUB_API_URL_ENV,
    show_envvar=True,
    default=GITHUB_API_URL,
    show_default=True,
    help=f"The GitHub API; the token comes from {GITHUB_TOKEN_ENV}.",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the decision; change nothing (a workflow_run still reads reviews)."
)
def labels(
    event_path: Path, pull_text: str | None, allowlist_path: Path, bot_login: str, github_api_url: str, dry_run: bool
) -> int:
    """Add `ci: full pre-merge approved` when an approver (the allowlist's `approve`) approves the pull request;
    remove an approval label anyone else applied, with a comment. Fails closed: an allowlist that cannot be read
    adds nothing and removes what was applied, then exits 1."""
    inputs = LabelInputs(event_path, pull_text, allowlist_path, bot_login)
    guard_labels(inputs, GitHubReach(github_api_url, dry_run), echo=click.echo)
    return 0
