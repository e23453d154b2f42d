"""What ci-tool writes into a checkout as output (a report, the site, a stage's results folder): never code.

The rule (docs/runners-and-history.md, "Reuse and what ci-tool writes"): an untracked file is output, not a
change to the code a run tests, when

    it lies where the generated pipelines write (layout.CI_SCRATCH: `.ci-tool/`, `results/`, ...), or
    ci-tool wrote it (`report --output`, `run --html-report`, `site --output`, `stage run --output-dir`, ...)
    and it still holds what ci-tool wrote: the manifest `.ci-tool/outputs.sha256` records its content hash

so reuse (gitinfo.code_version) and change-based selection (gitinfo.name_status, changed_since) pass over
it. A file of that name the user edits since counts again (its hash differs), and a tracked file is code
whoever wrote it: `ci-tool generate` and `durations export` change the committed inputs on purpose.

The manifest is `sha256sum`'s format, one line per write, appended in one write each (two ci-tool
processes can record at once); the last line of a path wins. Paths are relative to the folder ci-tool
runs in, the repository root (layout.py); a file written outside it is not in the checkout and not recorded.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ci_tool.atomic import append_text, make_folder
from ci_tool.layout import CI_SCRATCH, OUTPUTS_MANIFEST


def content_hash(path: Path) -> bytes:
    """The sha256 of a file's bytes (of a symbolic link's target path); b"" when it cannot be read."""
    try:
        if path.is_symlink():
            return hashlib.sha256(os.readlink(path).encode()).digest()
        return hashlib.sha256(path.read_bytes()).digest()
    except OSError:  # gone since it was listed, or unreadable: it has no hash to match
        return b""


def record(paths: Iterable[Path], *, root: Path | None = None) -> None:
    """Record files ci-tool just wrote as output (see the module docstring); files outside `root` (the
    current folder), under the scratch folders, or gone are left out."""
    root = Path(os.path.abspath(root or Path.cwd()))
    lines = []
    for path in paths:
        name = _relative(path, root)
        if name is None or _in_scratch(name) or "\n" in name or not (root / name).is_file():
            continue
        lines.append(f"{content_hash(root / name).hex()}  {name}\n")
    if lines:
        make_folder((root / OUTPUTS_MANIFEST).parent, what="the state folder")
        append_text(root / OUTPUTS_MANIFEST, "".join(lines), what="the outputs manifest")


def record_tree(folder: Path, *, root: Path | None = None) -> None:
    """Record every file under `folder` (a stage's results folder) as output; nothing when `folder` is the
    checkout itself or holds it (`--output-dir .` would make every new source file output)."""
    root = Path(os.path.abspath(root or Path.cwd()))
    absolute = Path(os.path.abspath(folder))
    if absolute == root or absolute in root.parents or not absolute.is_dir():
        return
    record((Path(top) / name for top, _, names in os.walk(absolute) for name in names), root=root)


def recorded(root: Path) -> Mapping[str, str]:
    """Path (relative to `root`) -> the hex content hash ci-tool wrote it with; {} without a manifest (an
    unreadable one records nothing: its files count as code, so reuse only ever spares less)."""
    try:
        text = (root / OUTPUTS_MANIFEST).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for line in text.splitlines():
        digest, separator, name = line.partition("  ")
        if separator and name:
            found[name] = digest
    return found


def is_output(root: Path, name: str, manifest: Mapping[str, str]) -> bool:
    """Whether the untracked file `name` (relative to `root`) is output, not code (the module docstring)."""
    if _in_scratch(name):
        return True
    digest = manifest.get(name)
    return digest is not None and digest == content_hash(root / name).hex()


def _in_scratch(name: str) -> bool:
    return any(name.startswith(path) if path.endswith("/") else name == path for path in CI_SCRATCH)


def _relative(path: Path, root: Path) -> str | None:
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return None
