"""manifest.json of a build folder: which commit and inputs it was built from, and its wheels."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ci_tool.atomic import write_text_atomically
from ci_tool.errors import BuildError
from ci_tool.json_file import parse_json
from ci_tool.text_file import read_text
from ci_tool.typed_json import structure

MANIFEST_NAME = "manifest.json"
SCHEMA = 1


@dataclass(frozen=True)
class BuildManifest:
    commit: str | None  # the checkout's commit (None outside a git checkout)
    inputs_digest: str  # inputs.inputs_digest: what decides whether a build serves a checkout
    python: str  # inputs.python_tag
    requirements: tuple[str, ...]  # what the wheelhouse satisfies, as pip reads it
    wheel: str  # the project's wheel, a file name in the folder
    wheels: dict[str, str]  # every wheel in the folder (the project's too) -> its sha256

    def to_json(self) -> dict[str, object]:
        return {
            "schema": SCHEMA, "commit": self.commit, "inputs_digest": self.inputs_digest, "python": self.python,
            "requirements": list(self.requirements), "wheel": self.wheel, "wheels": dict(sorted(self.wheels.items())),
        }  # fmt: skip

    def describe(self) -> str:
        """`commit 1a2b3c4d5e6f, inputs 9f8e7d6c, 42 wheels`."""
        commit = f"commit {self.commit[:12]}" if self.commit else "no commit"
        return f"{commit}, inputs {self.inputs_digest[:8]}, {len(self.wheels)} wheels"


def manifest_path(folder: Path) -> Path:
    return folder / MANIFEST_NAME


def write_manifest(folder: Path, manifest: BuildManifest) -> None:
    text = json.dumps(manifest.to_json(), indent=2) + "\n"
    write_text_atomically(manifest_path(folder), text, what="the build's manifest")


def read_manifest(folder: Path) -> BuildManifest:
    """The manifest of a build folder; a BuildError saying where for a missing or malformed one."""
    path = manifest_path(folder)
    if not path.is_file():
        raise BuildError(f"{path}: expected a build's manifest, found no file", hint="run `ci-tool build` first")
    text = read_text(path, name="the build's manifest", error=BuildError)
    value = parse_json(text, file=str(path), error=BuildError)
    if not isinstance(value, dict) or value.get("schema") != SCHEMA:
        raise BuildError(f"{path}: expected a build manifest of schema {SCHEMA}, found {_schema(value)!r}")
    fields = {key: item for key, item in value.items() if key != "schema"}
    return structure(fields, BuildManifest, file=str(path), error=BuildError, text=text)  # errors say where


def _schema(value: object) -> object:
    return value.get("schema") if isinstance(value, dict) else type(value).__name__
