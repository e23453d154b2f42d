"""What catalog-reading verbs share: the `--catalog`, `--test-db`, `--durations` options and their load,
reading a changed-files list and a JSON file, and printing a selection's errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import click

from ci_tool.errors import CiToolError, StageError, Where, capped, not_shown
from ci_tool.stages.catalog import CATALOG_PATH, DURATIONS_PATH
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog

F = TypeVar("F", bound=Callable[..., object])
DEFAULT_TEST_DB = "test-db"


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
            default=DEFAULT_TEST_DB,
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
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def load(catalog_path: Path, test_db: Path, durations_path: Path | None) -> LoadedCatalog:
    return open_catalog(catalog_path, test_db, durations_path)


def pull_request_options(command: F) -> F:
    """Add --changed-files (read into the keyword argument changed_files, a tuple of paths) and --label
    (labels): the pull-request facts selection reads."""
    decorators = (
        click.option(
            "--changed-files",
            type=click.Path(dir_okay=False, path_type=Path),
            callback=lambda _ctx, _param, path: read_changed_files(path) if path is not None else (),
            help="The pull request's changed paths, one per line (`git diff --name-only`).",
        ),
        click.option("--label", "labels", multiple=True, help="A label of the pull request (repeat for more)."),
    )
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


def read_changed_files(path: Path) -> tuple[str, ...]:
    """A pull request's changed paths, one per line (`git diff --name-only`); blank lines ignored."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "it is not UTF-8 text"
        raise StageError(f"cannot read the changed-files list: {reason}", where=Where(str(path))) from None
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def read_json(path: Path, what: str) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "it is not UTF-8 text"
        raise StageError(f"cannot read {what}: {reason}", where=Where(str(path))) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise StageError(
            f"expected {what} as JSON, found {error.msg.lower()}", where=Where(str(path), error.lineno, error.colno)
        ) from None


def echo_errors(errors: Sequence[CiToolError]) -> None:
    """The first errors in full on stderr, then the count of the rest (see errors.MAX_SHOWN_ERRORS)."""
    shown, rest = capped(errors)
    for error in shown:
        click.echo(f"error: {error}", err=True)
    if rest:
        click.echo(not_shown(rest), err=True)
