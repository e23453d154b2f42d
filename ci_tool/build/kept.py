"""Builds a runner keeps between pipeline runs, one folder per inputs' digest, in a folder the runner's owner
names (`ci-tool build --kept-builds DIR`, or $CI_TOOL_KEPT_BUILDS in the runner's environment).

A self-hosted runner asked to build inputs it built before (a rerun, a commit that changes only tests, docs or
the catalog) copies the kept build instead of making it again: `pip wheel` of torch and the extras is half a
minute or more, a copy of its 600 MB a second. A kept build is only ever a candidate: the wheelhouse takes it
when its manifest names the digest and every wheel's sha256 matches, and builds afresh otherwise. Copies, not
hard links: a job that alters its build folder must not alter what the next run restores.

    restore(kept, digest, into)   copy kept/<digest> to the new folder `into`; False when none is kept (or it
                                  vanished mid-copy: another job removed it)
    keep(kept, folder, digest)    copy a finished build to kept/<digest> (a temporary name, then a rename: a
                                  reader never sees half of it), replacing one that no longer serves; then
                                  remove all but the KEEP most recently used
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

KEEP = 3  # builds kept: the target branch's and a few pull requests' (600 MB each for this project)
PARTIAL_PREFIX = ".partial-"


def restore(kept: Path, digest: str, into: Path) -> bool:
    source = kept / digest
    if not source.is_dir():
        return False
    try:
        shutil.copytree(source, into)
        os.utime(source)  # most recently used: the last to be removed
    except OSError:  # removed by another job's keep() while copied, or unreadable: build instead
        shutil.rmtree(into, ignore_errors=True)
        return False
    return True


def keep(kept: Path, folder: Path, digest: str) -> None:
    """Store `folder` (a build of `digest` that the wheelhouse just checked or made) as kept/<digest>. A runner
    whose cache cannot be written still has its build: errors here are left unsaid, as a cache's are."""
    try:
        kept.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=PARTIAL_PREFIX, dir=kept))
        shutil.copytree(folder, partial, dirs_exist_ok=True)
        target = kept / digest
        shutil.rmtree(target, ignore_errors=True)  # a kept build that did not serve (the caller built instead)
        try:
            partial.rename(target)
        except OSError:  # another job kept the same build just now: theirs stays
            shutil.rmtree(partial, ignore_errors=True)
        _drop_all_but_newest(kept)
    except OSError:
        return


def _drop_all_but_newest(kept: Path) -> None:
    builds = [path for path in kept.iterdir() if path.is_dir() and not path.name.startswith(PARTIAL_PREFIX)]
    builds.sort(key=lambda path: path.stat().st_mtime, reverse=True)
    for stale in builds[KEEP:]:
        shutil.rmtree(stale, ignore_errors=True)
