"""A test stage's install from a build, side by side: pip alone, uv as the stages run it (no cache), and uv
reading a cache that a runner keeps (empty, then warm), each into a fresh venv from the same build folder.

    .venv/bin/ci-tool build --output /tmp/cb-build
    .venv/bin/python bench/stage_install_bench.py /tmp/cb-build

Prints one line per installer with its wall time and the cache's size after it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ci_tool.build.spec import pip_install_command, project_build

ROOT = Path(__file__).resolve().parents[1]

NO_CACHE = " --no-cache"


def main(build: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="stage-install-") as scratch:
        stage, cache = Path(scratch) / "stage", Path(scratch) / "uv-cache"
        stage.mkdir()
        (stage / "ci-build").symlink_to(build.resolve())
        as_staged = pip_install_command(project_build(ROOT))
        assert NO_CACHE in as_staged, as_staged
        cached = as_staged.replace(NO_CACHE, "")
        runs = [
            ("pip alone", pip_install_command(replace(project_build(ROOT), installer=None))),
            ("uv, no cache (the stages' command)", as_staged),
            ("uv, a kept cache, empty", cached),
            ("uv, a kept cache, warm", cached),
        ]
        environment = {**os.environ, "UV_CACHE_DIR": str(cache), "PIP_NO_CACHE_DIR": "1"}
        for name, command in runs:
            started = time.monotonic()
            subprocess.run(["bash", "-e", "-c", command], cwd=stage, env=environment, check=True)
            took = time.monotonic() - started
            print(f"{name:40s} {took:7.1f} s   cache {_size(cache) / 1e9:5.2f} GB", flush=True)
            shutil.rmtree(stage / ".venv")


def _size(folder: Path) -> int:
    if not folder.exists():
        return 0
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
