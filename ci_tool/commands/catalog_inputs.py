"""What catalog-reading verbs share: the `--catalog`, `--test-db`, `--durations` options and their load,
the pull request's options (its change as `--base`/`--head`, its labels), and printing a selection's
errors."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from ci_tool.errors import CiToolError, capped, not_shown
from ci_tool.layout import CATALOG_PATH, DURATIONS_PATH, TEST_DB_DIR
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog
from ci_tool.stages.executors import pool_of

F = TypeVar("F", bound=Callable[..., object])


def catalog_options(command: F) -> F:
    """Add --catalog, --test-db and --durations (keyword arguments catalog_path, test_db, durations_path)."""
    decorators = (
        click.option(
            "--catalog",
            "catalog_path",
            default=CATALOG_PATH,
            show_default=True,
            type=click.Path(dir_okay=False, path_type=Path),
            help="The stage catalog.",
        ),
        click.option(
            "--test-db",
            "test_db",
            default=TEST_DB_DIR,
            show_default=True,
            type=click.Path(file_okay=False, path_type=Path),
            help="Folder holding the test-db *.yml files the catalog's contexts name.",
        ),
        click.option(
            "--durations",
            "durations_path",
            type=click.Path(dir_okay=False, path_type=Path),
            help=f"pytest-split durations JSON [default: {DURATIONS_PATH} when it exists].",
        ),
    )
    return with_decorators(command, decorators)


def with_decorators(command: F, decorators: tuple[Callable[[F], F], ...]) -> F:
    """`command` under `decorators`, the first outermost (as if written above it in that order)."""
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def load(catalog_path: Path, test_db: Path, durations_path: Path | None) -> LoadedCatalog:
    return open_catalog(catalog_path, test_db, durations_path)


_PULL_REQUEST_OPTIONS = (
    click.option(
        "--changed-files",
        hidden=True,
        expose_value=False,
        callback=lambda _ctx, _param, value: _changed_files_gone() if value is not None else None,
    ),
    click.option(
        "--base",
        metavar="REF",
        help="The target branch: the change is what HEAD (or --head) changes since the merge base with it, read "
        "from git (change/build.py); change-based selection compares the test-db and waives with their text there.",
    ),
    click.option(
        "--head",
        metavar="REF",
        help="With --base: the pull request's head commit (CI passes HEAD) [default: the work tree, "
        "uncommitted and untracked files included].",
    ),
    click.option("--label", "labels", multiple=True, help="A label of the pull request (repeat for more)."),
    click.option(
        "--labels-json",
        metavar="JSON",
        callback=lambda _ctx, _param, text: parse_labels_json(text) if text is not None else (),
        help="The pull request's labels as a JSON list of strings (how CI passes them).",
    ),
)


def pull_request_options(command: F) -> F:
    """Add --base (the keyword argument base, the target branch) and --head (head; change.build.GitRange reads
    the change from these), and --label and --labels-json (both into labels, a tuple): the pull-request facts
    selection reads."""

    @functools.wraps(command)
    def with_labels(*args: Any, labels: tuple[str, ...], labels_json: tuple[str, ...], **kwargs: Any) -> object:
        if kwargs["head"] is not None and kwargs["base"] is None:
            raise click.UsageError("--head needs --base: the change is measured from the merge base with it")
        return command(*args, labels=(*labels, *labels_json), **kwargs)

    wrapped: F = with_labels  # type: ignore[assignment]  # same signature to click
    return with_decorators(wrapped, _PULL_REQUEST_OPTIONS)


def parse_labels_json(text: str) -> tuple[str, ...]:
    """`--labels-json`: a JSON list of label strings (an empty value is no labels)."""
    try:
        labels = json.loads(text) if text.strip() else []
    except (json.JSONDecodeError, RecursionError) as error:
        detail = error.msg.lower() if isinstance(error, json.JSONDecodeError) else "nesting too deep"
        raise click.BadParameter(f"expected a JSON list of labels, found invalid JSON ({detail})") from None
    if not isinstance(labels, list) or not all(isinstance(label, str) for label in labels):
        raise click.BadParameter(f"expected a JSON list of label strings, found {text.strip()!r}")
    return tuple(labels)


def _changed_files_gone() -> None:
    """`--changed-files` is gone: a bare list of paths is a change read a third way (no renames, no statuses, no
    texts at the head), so every job now reads the change from git (--base/--head), as the bot's preview does
    through the GitHub API."""
    raise click.BadParameter(
        "expected the change as --base REF [--head REF], found a changed-files list (a list of paths is no longer "
        "read: the change comes from git, renames and removals included) Hint: pass --base <target branch> "
        "--head HEAD instead of `git diff --name-only` into a file",
        param_hint="'--changed-files'",
    )


def facts_line(
    system_info: Path | None, *, platform: str = "", platform_facts: bool = False, slurm: bool = False
) -> str:
    """The one line `stage show` and `stage run --dry-run` print about the facts they rendered with: the
    stage name's over what the catalog says its platform's runners report (`platform_facts`), else the
    name's alone (what CI knows before a runner starts; a condition on a fact only the runner knows
    matches), or a sysinfo file's under the name's."""
    if system_info is not None and not slurm:
        return f"facts: {system_info} (--system-info) under the stage name's"
    if platform_facts:
        said = f"facts: the stage name's over platform {pool_of(platform)!r}'s (the catalog's `platforms:`)"
    else:
        said = "facts: the stage name's only"
    if slurm:
        return f"{said}, as its Slurm job renders"
    if platform_facts:
        return f"{said}; --system-info FILE renders for a machine"
    return f"{said} (conditions on machine facts match); --system-info FILE renders for a machine"


def echo_errors(errors: Sequence[CiToolError]) -> None:
    """The first errors in full on stderr, then the count of the rest (see errors.MAX_SHOWN_ERRORS)."""
    shown, rest = capped(errors)
    for error in shown:
        click.echo(f"error: {error}", err=True)
    if rest:
        click.echo(not_shown(rest), err=True)
