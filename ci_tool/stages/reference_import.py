"""Import TensorRT-LLM's stage table as a catalog (`ci-tool stages import`): pure, text in, catalog text out.

The reference keeps its stages in one of two forms, both read here:

    family JSON   {"configs": [{"name": "A10-PyTorch", "arch": "x86", "slurm": false, "platform": "a10",
                                "testDB": "l0_a10", "splits": 3, "gpuCount": 1, ...}, ...]}
    shard rows    def x86TestConfigs = [                              (Groovy map literals, one a dispatch
                      "A10-PyTorch-1": ["a10", "l0_a10", 1, 3],       bucket, one row a shard: platform,
                      "A10-PyTorch-2": ["a10", "l0_a10", 2, 3], ...   context, K, N, gpus, nodes,
                  ]                                                   runWithSbatch, useClusterDurations)

A row's arch and dispatch come from its map's name, as the reference's buckets say them: `SBSA`/`aarch64`
or `multiNodes` in it means aarch64, `Slurm` or `multiNodes` means Slurm (an `auto:` platform means Slurm
in any map); rows outside a named map are x86 and dispatch by their platform.

Each family becomes a catalog entry (name, platform, context, splits, arch, and `executor: slurm` where the
reference dispatches to Slurm and the platform does not say so already with `auto:`). What has no place in a
catalog is said per row, as a note the command prints and a comment above the family:
- GPU and node counts are the name's in ci-tool (one source of truth), so a count is dropped, and a count
  that differs from the name is a note;
- `runWithSbatch`, `useClusterDurations`, `modelExpressSidecar` and `target` have no catalog field;
- rows of one family that disagree (platform, context, shard count, missing or repeated shards) are notes,
  the first row's values kept.
A row whose name is not a shard name (`...-K`) or whose fields have the wrong kinds is a problem: the import
stops listing every problem, located by line (rows) or JSON path (configs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ci_tool.errors import CiToolError, StageError, Where, raise_all
from ci_tool.json_file import parse_json
from ci_tool.stages.catalog import FORMAT_VERSION
from ci_tool.stages.executors import AUTO_PREFIX
from ci_tool.stages.names import parse_family_name

ARCHES = {"x86": "x86_64", "SBSA": "aarch64"}  # the reference's arch -> the catalog's
_ROW = re.compile(r'^\s*"(?P<stage>[^"]+)"\s*:\s*\[(?P<fields>[^\]]*)\]\s*,?\s*(?://.*)?$')
_SHARD = re.compile(r"^(?P<family>.+)-(?P<k>\d+)$")
_MAP = re.compile(r"^\s*(?:def\s+)?(?P<name>\w+)\s*=\s*\[")
_UNMAPPED = {
    "runWithSbatch": "ci-tool's Slurm executor always submits sbatch jobs",
    "useClusterDurations": "durations come from one file (or the shared history), not one per cluster",
    "modelExpressSidecar": "the catalog has no sidecar containers; install them in the runner's image",
    "target": "the pipeline bucket follows from arch, executor and node count",
}


@dataclass
class ImportedFamily:
    """One family as the reference writes it, with what could not be carried over."""

    name: str
    platform: str
    context: str
    splits: int
    arch: str = "x86_64"
    slurm: bool = False
    notes: list[str] = field(default_factory=list)

    def yaml(self) -> str:
        """The family's catalog entry, its notes as comments above it."""
        lines = [f"  # {note}" for note in self.notes]
        lines.append(f"  - name: {self.name}")
        lines.append(f"    platform: {_quoted(self.platform)}")
        lines.append(f"    context: {self.context}")
        lines.append(f"    splits: {self.splits}")
        if self.arch != "x86_64":
            lines.append(f"    arch: {self.arch}")
        if self.slurm and not self.platform.startswith(AUTO_PREFIX):
            lines.append("    executor: slurm")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ImportedCatalog:
    families: tuple[ImportedFamily, ...]
    source: str

    @property
    def notes(self) -> list[str]:
        return [f"{family.name}: {note}" for family in self.families for note in family.notes]

    def yaml(self) -> str:
        header = (
            f"# Imported from {self.source} by `ci-tool stages import`: {len(self.families)} families, "
            f"{sum(f.splits for f in self.families)} stages.\n"
        )
        return header + f"version: {FORMAT_VERSION}\nfamilies:\n" + "".join(f.yaml() for f in self.families)


def import_stage_table(text: str, *, source: str) -> ImportedCatalog:
    """The reference's stage table (either form, told apart by its first character) as a catalog."""
    families = _from_configs(text, source) if text.lstrip().startswith("{") else _from_rows(text, source)
    return ImportedCatalog(tuple(families), source)


def _from_configs(text: str, source: str) -> list[ImportedFamily]:
    data = parse_json(text, file=source, error=StageError)
    configs = data.get("configs") if isinstance(data, dict) else None
    if not isinstance(configs, list):
        raise StageError(
            'expected a JSON object with a "configs" list, found ' + type(data).__name__,
            where=Where(source),
            hint='the family form is {"configs": [{"name": ..., "platform": ..., "testDB": ..., "splits": N}]}',
        )
    problems: list[CiToolError] = []
    families = []
    for index, config in enumerate(configs):
        family = _family_of_config(config, f"configs[{index}]", source, problems)
        if family is not None:
            families.append(family)
    raise_all(problems, source)
    return families


def _family_of_config(
    config: object, path: str, source: str, problems: list[CiToolError]
) -> ImportedFamily | None:
    def problem(key: str, expected: str, found: object) -> None:
        where = Where(source, yaml_path=f"{path}.{key}" if key else path)
        problems.append(StageError(f"expected {expected}, found {json.dumps(found)}", where=where))

    if not isinstance(config, dict):
        problem("", "a family object", config)
        return None
    values: dict[str, object] = {}
    for key, kind, expected in (
        ("name", str, "a family name"),
        ("platform", str, "a platform"),
        ("testDB", str, "a test-db context"),
        ("splits", int, "a shard count >= 1"),
    ):
        value = config.get(key)
        if not isinstance(value, kind) or isinstance(value, bool) or (key == "splits" and value < 1):  # type: ignore[operator]
            problem(key, expected, value)
        else:
            values[key] = value
    arch = config.get("arch", "x86")
    if arch not in ARCHES:
        problem("arch", " or ".join(repr(a) for a in ARCHES), arch)
    if len(values) < 4 or arch not in ARCHES:
        return None
    family = ImportedFamily(
        name=str(values["name"]),
        platform=str(values["platform"]),
        context=str(values["testDB"]),
        splits=int(values["splits"]),  # type: ignore[call-overload]
        arch=ARCHES[arch],
        slurm=config.get("slurm") is True,
    )
    _note_counts(family, config.get("gpuCount"), config.get("nodeCount"))
    family.notes += [f"{key} {json.dumps(config[key])}: not carried over ({why})" for key, why in _UNMAPPED.items()
                     if key in config and config[key] not in (False, None)]  # fmt: skip
    return family


def _from_rows(text: str, source: str) -> list[ImportedFamily]:
    problems: list[CiToolError] = []
    rows: dict[str, list[tuple[int, int, list[object]]]] = {}  # family -> (line, K, fields)
    buckets: dict[str, str] = {}  # family -> the map its first row is in
    bucket = ""
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _MAP.match(line)
        bucket = opened.group("name") if opened else bucket
        match = _ROW.match(line)
        if match is None:
            continue
        where = Where(source, number, match.start("stage") + 1)
        shard = _SHARD.match(match.group("stage"))
        fields = _row_fields(match.group("fields"))
        if shard is None or fields is None or len(fields) < 4 or not _row_kinds(fields):
            problems.append(
                StageError(
                    f'expected "Name-K": [platform, context, K, N, ...], found {line.strip()!r}',
                    where=where,
                    hint="platform and context are strings; K and N whole numbers, N >= K >= 1",
                )
            )
            continue
        rows.setdefault(shard.group("family"), []).append((number, int(shard.group("k")), fields))
        buckets.setdefault(shard.group("family"), bucket)
    if not rows and not problems:
        problems.append(
            StageError(
                'expected stage rows such as "A10-PyTorch-1": ["a10", "l0_a10", 1, 3], found none',
                where=Where(source),
                hint='or the family JSON form {"configs": [...]}',
            )
        )
    raise_all(problems, source)
    return [_family_of_rows(name, found, buckets[name]) for name, found in rows.items()]


def _row_fields(text: str) -> list[object] | None:
    """A Groovy list literal's items (strings, numbers, booleans), read as JSON."""
    try:
        fields = json.loads(f"[{text.strip().rstrip(',')}]")
    except json.JSONDecodeError:
        return None
    return fields if isinstance(fields, list) else None


def _row_kinds(fields: Sequence[object]) -> bool:
    platform, context, k, n = fields[:4]
    whole = all(isinstance(v, int) and not isinstance(v, bool) for v in (k, n))
    return isinstance(platform, str) and isinstance(context, str) and whole and 1 <= k <= n  # type: ignore[operator]


def _family_of_rows(name: str, rows: list[tuple[int, int, list[object]]], bucket: str) -> ImportedFamily:
    first_line, _, first = rows[0]
    platform, context, _, splits = first[:4]
    aarch64 = any(word in bucket for word in ("SBSA", "aarch64", "multiNodes"))
    slurm = "Slurm" in bucket or "multiNodes" in bucket or str(platform).startswith(AUTO_PREFIX)
    family = ImportedFamily(name, str(platform), str(context), int(splits),  # type: ignore[call-overload]
                            arch="aarch64" if aarch64 else "x86_64", slurm=slurm)  # fmt: skip
    for line, _, fields in rows[1:]:
        for index, label in ((0, "platform"), (1, "context"), (3, "shard count")):
            if fields[index] != first[index]:
                family.notes.append(f"line {line}: {label} {fields[index]!r} differs from line {first_line}'s "
                                    f"{first[index]!r}; kept {first[index]!r}")  # fmt: skip
    shards = sorted(k for _, k, _ in rows)
    if shards != list(range(1, family.splits + 1)):
        family.notes.append(f"rows for shards {shards} of {family.splits}: the family keeps {family.splits} shards")
    extra = dict(zip(("gpuCount", "nodeCount", "runWithSbatch", "useClusterDurations"), first[4:], strict=False))
    _note_counts(family, extra.get("gpuCount"), extra.get("nodeCount"))
    family.notes += [f"{key} {json.dumps(value)}: not carried over ({_UNMAPPED[key]})"
                     for key, value in extra.items() if key in _UNMAPPED and value]  # fmt: skip
    return family


def _note_counts(family: ImportedFamily, gpus: object, nodes: object) -> None:
    """A GPU or node count that differs from what the name says (the name wins in ci-tool)."""
    try:
        name = parse_family_name(family.name)
    except StageError:
        return  # the catalog's load names the bad name, with its hint
    said: Mapping[str, tuple[object, int]] = {"gpuCount": (gpus, name.gpu_count), "nodeCount": (nodes, name.node_count)}
    for key, (written, from_name) in said.items():
        if written is not None and written != from_name:
            family.notes.append(f"{key} {written} differs from the name's {from_name}: the name's is kept")


def _quoted(text: str) -> str:
    """`auto:pool` needs quotes in YAML flow context only; quote anything with a colon to be plain."""
    return json.dumps(text) if ":" in text else text
