"""The inputs' digest of a build: two checkouts (or two commits) whose digests agree build the same wheels,
so a build of one serves the other.

    sha256 over: the build spec's requirements, this Python's major.minor and machine (the wheelhouse holds
    platform wheels: torch's), then every file of the package sources (layout.PACKAGE_SOURCES) by relative
    path and content, sorted, less what a build or an import leaves there (__pycache__, *.egg-info, *.pyc)
"""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Iterator
from pathlib import Path

from ci_tool.build.spec import BuildSpec
from ci_tool.errors import BuildError
from ci_tool.layout import PACKAGE_SOURCES

IGNORED_PARTS = ("__pycache__",)
IGNORED_SUFFIXES = (".egg-info", ".pyc")


def python_tag() -> str:
    """`3.11-x86_64`: the interpreter and machine a build's platform wheels are for."""
    return f"{sys.version_info.major}.{sys.version_info.minor}-{platform.machine()}"


def source_files(root: Path) -> Iterator[Path]:
    """Every package source file under `root`, sorted by relative path (a missing source is a BuildError)."""
    for name in PACKAGE_SOURCES:
        origin = root / name
        if origin.is_file():
            yield origin
        elif origin.is_dir():
            yield from sorted(path for path in origin.rglob("*") if path.is_file() and not _ignored(path, root))
        else:
            raise BuildError(f"{origin}: expected a package source ({', '.join(PACKAGE_SOURCES)}), found none")


def inputs_digest(root: Path, spec: BuildSpec) -> str:
    """The hex sha256 of what a build of the checkout at `root` is made from (module docstring)."""
    digest = hashlib.sha256()
    for line in (*spec.requirements, python_tag()):
        digest.update(line.encode() + b"\n")
    for path in source_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _ignored(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).parts
    return any(part in IGNORED_PARTS or part.endswith(IGNORED_SUFFIXES) for part in parts)
