"""A build folder's manifest.json read back: the value written, or one error at the JSON path of what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.build.manifest import BuildManifest, manifest_path, read_manifest, write_manifest
from ci_tool.errors import BuildError

MANIFEST = BuildManifest("a" * 40, "d" * 64, "cp311", ("tinydep==1.0",), "ci_tool-0.1.0-py3-none-any.whl",
                         {"ci_tool-0.1.0-py3-none-any.whl": "e" * 64})  # fmt: skip


def test_a_manifest_reads_back_as_written(tmp_path: Path) -> None:
    write_manifest(tmp_path, MANIFEST)
    assert read_manifest(tmp_path) == MANIFEST


BAD = [
    ("requirements not a list", {"requirements": "tinydep"},
     ":6:19 (requirements): expected an array, found 'tinydep'"),
    ("a wheel's digest not text", {"wheels": {"w.whl": 3}}, ":11:14 (wheels.w.whl): expected a string, found 3"),
    ("python not text", {"python": None}, ":5:13 (python): expected a string, found null"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "message"), [r[1:] for r in BAD], ids=[r[0] for r in BAD])
def test_a_malformed_manifest_says_where(tmp_path: Path, change: dict[str, object], message: str) -> None:
    """Before typed_json read it: `expected a build manifest, found a malformed one (TypeError(...))`."""
    write_manifest(tmp_path, MANIFEST)
    path = manifest_path(tmp_path)
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}, indent=2))  # as write_manifest does
    with pytest.raises(BuildError) as raised:
        read_manifest(tmp_path)
    assert str(raised.value) == f"{path}{message}"


def test_a_manifest_of_another_schema_is_refused(tmp_path: Path) -> None:
    manifest_path(tmp_path).write_text('{"schema": 2}')
    with pytest.raises(BuildError) as raised:
        read_manifest(tmp_path)
    assert str(raised.value) == f"{manifest_path(tmp_path)}: expected a build manifest of schema 1, found 2"
