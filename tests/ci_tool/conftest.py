"""Fixtures shared by the ci_tool tests: real faults in a real history file."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

DamagePage = Callable[[Path, str], None]


def _damage_page(history: Path, table: str) -> None:
    """Write garbage over one page of a closed history: the root page of `table`, or page 1 for 'header'."""
    with sqlite3.connect(f"{history.absolute().as_uri()}?mode=ro", uri=True) as db:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        found = db.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,)).fetchone()
    db.close()
    page = 1 if table == "header" else found[0]
    with history.open("r+b") as file:
        file.seek((page - 1) * page_size)
        file.write(b"\xde\xad\xbe\xef" * (page_size // 4))


@pytest.fixture(scope="session")
def damage_page() -> DamagePage:
    """`damage_page(history, table)`: one corrupted page, as a failing disk or a killed copy leaves it."""
    return _damage_page
