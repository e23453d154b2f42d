"""Read and validate `jenkins/stages.yml` (schema: catalog.py) into a Catalog, checked against the test-db.

Validation, every problem of the file collected, the first raised (`file:line:col (yaml.path): ...`):
- unknown keys anywhere (a typo such as `split: 4` would otherwise run one shard), with did-you-mean;
- family names parse as test families (names.py), in today's spelling, each once;
- gpu_count, node_count and on_demand, when written, say what the name says (a 4-GPU family is named
  `...-4_GPUs-...`); CPU families run on platform `cpu` and GPU families elsewhere; a platform ending
  in `-x<N>` has at least the family's GPUs;
- perf-mode families have splits 1 (perf mode runs the whole list); `splits: auto` needs budget_minutes;
- tag triggers name a token some family carries; file-group stage globs match some stage.

Then against the test-db and durations: each context must exist, and each family is planned once (stage
facts only, no sysinfo) to turn `splits: auto` into a count and to derive timeouts. A context that renders
nothing is not a load error: `ci-tool testdb check` reports it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from yaml.nodes import Node, SequenceNode

from ci_tool.errors import CiToolError, StageError, Where, did_you_mean
from ci_tool.layout import durations_file_of
from ci_tool.stages.catalog import (
    FORMAT_VERSION,
    Catalog,
    Family,
    FileGroup,
    Stage,
    TagTrigger,
    TimeoutRule,
    carries,
    stage_glob_matches,
    tokens_of,
)
from ci_tool.stages.catalog_rules import (
    Problem,
    budget_problem,
    count_problem,
    on_demand_problem,
    platform_problem,
    splits_problem,
)
from ci_tool.stages.durations import Durations, load_durations
from ci_tool.stages.names import (
    LEGACY_POST_MERGE,
    StageName,
    parse_family_name,
)
from ci_tool.stages.plan import plan_family
from ci_tool.stages.query import ARCHES
from ci_tool.testdb.lines import MAX_TIMEOUT_MINUTES
from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.model import TestDb
from ci_tool.text_file import read_text
from ci_tool.yaml_nodes import NodeReader, compose, describe, int_value, kind

TOP_KEYS = ("version", "timeouts", "multi_gpu_paths", "tag_triggers", "file_groups", "families")
FAMILY_KEYS = (
    "name",
    "platform",
    "context",
    "splits",
    "budget_minutes",
    "gpu_count",
    "node_count",
    "on_demand",
    "timeout_minutes",
    "arch",
)
REQUIRED_FAMILY_KEYS = ("name", "platform", "context", "splits")
TIMEOUT_KEYS = ("margin", "minimum_minutes")
FILE_GROUP_KEYS = ("name", "paths", "stages")
_EXAMPLES = {"name": "A10-PyTorch", "platform": "a10", "context": "l0_a10", "splits": "1"}
_CONTEXT = re.compile(r"[A-Za-z0-9_]+")
MAX_MARGIN = 100  # a larger timeout margin is a typo (and 1e308 overflows the minutes)
MAX_SPLITS = 1000  # shards of one family; every one is a stage in the generated pipelines


@dataclass(frozen=True)
class LoadedCatalog:
    """The catalog with the test-db and durations it was resolved against (what planning needs)."""

    catalog: Catalog
    db: TestDb
    durations: Durations


def open_catalog(
    catalog_path: str | Path, test_db_path: str | Path, durations_path: str | Path | None = None
) -> LoadedCatalog:
    """Load the test-db, the durations (`<test-db>/.test_durations` when it exists) and the catalog."""
    db = load_test_db(test_db_path)
    if durations_path is None:
        default = durations_file_of(Path(test_db_path))
        durations: Durations = load_durations(default) if default.is_file() else {}
    else:
        durations = load_durations(durations_path)
    return LoadedCatalog(load_catalog(catalog_path, db=db, durations=durations), db, durations)


def load_catalog(path: str | Path, *, db: TestDb, durations: Durations) -> Catalog:
    """Read, validate and resolve a catalog file; raise its first problem."""
    text = read_text(path, name="the stage catalog", error=StageError)
    return parse_catalog(text, file=str(path), db=db, durations=durations)


def parse_catalog(text: str, *, file: str, db: TestDb, durations: Durations) -> Catalog:
    """Validate catalog YAML text and resolve it against the test-db and durations."""
    reader = _CatalogReader(file)
    drafts, catalog = reader.read(compose(text, file=file, error=StageError))
    reader.raise_first()
    catalog = _resolve(reader, drafts, catalog, db, durations)
    reader.raise_first()
    return catalog


@dataclass(frozen=True)
class _Draft:
    """A family as written, before the test-db resolves its shard count and timeout."""

    name: StageName
    platform: str
    context: str
    splits: int | Literal["auto"]
    budget_minutes: float | None
    timeout_minutes: int | None
    arch: str
    nodes: dict[str, Node]  # the family's key -> value nodes, for positions
    path: str  # families[i]


class _CatalogReader(NodeReader):
    def __init__(self, file: str) -> None:
        super().__init__(file, StageError)
        self.group_nodes: list[Node] = []  # each file group's `stages` list, for positions

    def read(self, document: Node | None) -> tuple[list[_Draft], Catalog]:
        empty = Catalog(self.file, (), ())
        if document is None:
            message = f"expected `version: {FORMAT_VERSION}` and `families`, found an empty file"
            self.problems.append(StageError(message, where=Where(self.file)))
            return [], empty
        top = self.mapping(document, "", f"a mapping with `version: {FORMAT_VERSION}` and `families`", TOP_KEYS)
        if top is None:
            return [], empty
        version = top.get("version")
        if version is None or version.value != str(FORMAT_VERSION):
            found = describe(version) if version is not None else "none"
            hint = f"start the file with `version: {FORMAT_VERSION}`"
            self.problem(version or document, "version", f"expected version {FORMAT_VERSION}, found {found}", hint)
        drafts = self.read_families(top.get("families"), document)
        names = [draft.name for draft in drafts]
        catalog = Catalog(
            file=self.file,
            families=(),
            stages=(),
            timeouts=self.read_timeouts(top["timeouts"]) if "timeouts" in top else TimeoutRule(),
            multi_gpu_paths=self.paths(top["multi_gpu_paths"], "multi_gpu_paths") if "multi_gpu_paths" in top else (),
            tag_triggers=self.read_triggers(top["tag_triggers"], names) if "tag_triggers" in top else (),
            file_groups=self.read_groups(top["file_groups"]) if "file_groups" in top else (),
        )
        return drafts, catalog

    def paths(self, node: Node, path: str) -> tuple[str, ...]:
        return self.strings(node, path, "paths", _path_problem)

    def read_timeouts(self, node: Node) -> TimeoutRule:
        fields = self.mapping(node, "timeouts", "a mapping of margin and minimum_minutes", TIMEOUT_KEYS) or {}
        default = TimeoutRule()
        margin = default.margin
        if "margin" in fields:
            number = self.number(fields["margin"], "timeouts.margin", "a number")
            if number is not None and not 1 <= number <= MAX_MARGIN:
                hint = "the margin multiplies the predicted minutes: 2 doubles them"
                limit = "at least 1" if number < 1 else f"at most {MAX_MARGIN}"
                message = f"expected a margin of {limit}, found {fields['margin'].value}"
                self.problem(fields["margin"], "timeouts.margin", message, hint)
            margin = number if number is not None else margin
        minimum = None
        if "minimum_minutes" in fields:
            minimum = self.integer(
                fields["minimum_minutes"],
                "timeouts.minimum_minutes",
                "minutes >= 1",
                minimum=1,
                maximum=MAX_TIMEOUT_MINUTES,
            )
        return TimeoutRule(margin, minimum or default.minimum_minutes)

    def read_triggers(self, node: Node, names: list[StageName]) -> tuple[TagTrigger, ...]:
        fields = self.mapping(node, "tag_triggers", "a mapping of path: token", None) or {}
        tokens = sorted({token for name in names for token in tokens_of(name)})
        triggers = []
        for path, value in fields.items():
            key_path = f"tag_triggers.{path}"
            problem = _path_problem(path)
            token = self.scalar(value, key_path, ("str",), "a tag or backend token")
            if problem:
                self.problem(value, key_path, f"expected {problem}, found {path!r}")
            elif token is not None and names and not any(carries(name, token) for name in names):
                hint = did_you_mean(token, tokens) or f"the families carry {', '.join(tokens)}"
                self.problem(
                    value, key_path, f"expected a tag or backend token some family carries, found {token!r}", hint
                )
            elif token is not None:
                triggers.append(TagTrigger(path, token))
        return tuple(triggers)

    def read_groups(self, node: Node) -> tuple[FileGroup, ...]:
        if not isinstance(node, SequenceNode) or not node.value:
            self.problem(node, "file_groups", f"expected a list of file groups, found {describe(node)}")
            return ()
        groups = []
        for index, item in enumerate(node.value):
            path = f"file_groups[{index}]"
            fields = self.mapping(item, path, "a file group (name, paths, stages)", FILE_GROUP_KEYS)
            if fields is None:
                continue
            missing = [key for key in FILE_GROUP_KEYS if key not in fields]
            if missing:
                self.problem(item, path, f"expected {', '.join(missing)} in the file group, found none")
                continue
            name = self.scalar(fields["name"], f"{path}.name", ("str",), "a group name")
            paths = self.paths(fields["paths"], f"{path}.paths")
            stages = self.strings(fields["stages"], f"{path}.stages", "stage names or globs", lambda _: None)
            self.group_nodes.append(fields["stages"])
            if name is not None and paths and stages:
                groups.append(FileGroup(name, paths, stages))
        return tuple(groups)

    def read_families(self, node: Node | None, document: Node) -> list[_Draft]:
        if node is None:
            hint = "add `families:` with one entry per stage family"
            self.problem(document, None, "expected a `families` list, found none", hint)
            return []
        if not isinstance(node, SequenceNode) or not node.value:
            self.problem(node, "families", f"expected a non-empty list of families, found {describe(node)}")
            return []
        drafts: list[_Draft] = []
        first_line: dict[str, int] = {}
        for index, item in enumerate(node.value):
            draft = self.read_family(f"families[{index}]", item)
            if draft is None:
                continue
            line = self.where(item, None).line or 0
            if draft.name.name in first_line:
                message = f"expected each family once, found {draft.name.name!r} again (first at line "
                self.problem(
                    draft.nodes["name"],
                    f"{draft.path}.name",
                    message + f"{first_line[draft.name.name]})",
                    hint="delete one of the two, or rename one",
                )
                continue
            first_line[draft.name.name] = line
            drafts.append(draft)
        return drafts

    def read_family(self, path: str, node: Node) -> _Draft | None:
        fields = self.mapping(node, path, "a family (name, platform, context, splits)", FAMILY_KEYS)
        if fields is None:
            return None
        label = str(fields["name"].value) if "name" in fields and kind(fields["name"]) == "str" else path
        missing = [key for key in REQUIRED_FAMILY_KEYS if key not in fields]
        for key in missing:
            self.problem(
                node,
                path,
                f"expected `{key}` in family {label!r}, found none",
                hint=f"add e.g. `{key}: {_EXAMPLES[key]}`",
            )
        before = len(self.problems)
        name = self.read_name(fields["name"], f"{path}.name") if "name" in fields else None
        platform = (
            self.scalar(fields["platform"], f"{path}.platform", ("str",), "a runner label")
            if "platform" in fields
            else None
        )
        context = (
            self.scalar(fields["context"], f"{path}.context", ("str",), "a test-db context")
            if "context" in fields
            else None
        )
        splits = self.read_splits(fields["splits"], f"{path}.splits") if "splits" in fields else None
        if missing or name is None or platform is None or context is None or splits is None:
            return None
        if not _CONTEXT.fullmatch(context):
            self.problem(
                fields["context"],
                f"{path}.context",
                f"expected a context name (letters, digits, '_'), found {context!r}",
            )
        self.check_rules(name, platform, splits, fields, path)
        budget = self.budget(fields, path)
        timeout = None
        if "timeout_minutes" in fields:
            timeout = self.integer(
                fields["timeout_minutes"],
                f"{path}.timeout_minutes",
                "minutes >= 1",
                minimum=1,
                maximum=MAX_TIMEOUT_MINUTES,
            )
        arch = "x86_64"
        if "arch" in fields:
            arch = self.scalar(fields["arch"], f"{path}.arch", ("str",), "an architecture") or arch
            if arch not in ARCHES:
                self.problem(
                    fields["arch"],
                    f"{path}.arch",
                    f"expected {' or '.join(ARCHES)}, found {arch!r}",
                    hint=did_you_mean(arch, ARCHES),
                )
        if len(self.problems) > before:
            return None
        return _Draft(name, platform, context, splits, budget, timeout, arch, fields, path)

    def read_name(self, node: Node, path: str) -> StageName | None:
        text = self.scalar(node, path, ("str",), "a family name such as 'A10-PyTorch'")
        if text is None:
            return None
        try:
            name = parse_family_name(text, where=self.where(node, path))
        except StageError as error:
            self.problems.append(error)
            return None
        if not name.is_test:
            kind_words = name.kind.value.replace("_", " ")
            self.problem(
                node,
                path,
                f"expected a test family name (GPU-Backend[-Tags]), found the {kind_words} stage {text!r}",
                hint="the catalog lists test families; build, docs and package stages are not cataloged yet",
            )
            return None
        if LEGACY_POST_MERGE in text:
            self.problem(
                node,
                path,
                f"expected today's spelling of the family name, found {text!r}",
                hint=f"write {name.canonical_name!r}",
            )
            return None
        return name

    def read_splits(self, node: Node, path: str) -> int | Literal["auto"] | None:
        if kind(node) == "str" and node.value == "auto":
            return "auto"
        count = int_value(node.value) if kind(node) == "int" else ""
        if isinstance(count, int) and 1 <= count <= MAX_SPLITS:
            return count
        hint = "write e.g. `splits: 2`, or `splits: auto` with `budget_minutes`"
        if isinstance(count, int) and count > MAX_SPLITS:
            hint = f"a family has at most {MAX_SPLITS} shards; {hint}"
        message = f"expected a shard count of at least 1, or auto, found {describe(node)}"
        self.problem(node, path, message, hint=count if isinstance(count, str) and count else hint)
        return None

    def report(self, node: Node, path: str, problem: Problem | None) -> None:
        if problem is not None:
            self.problem(node, path, *problem)

    def check_rules(
        self, name: StageName, platform: str, splits: int | str, fields: dict[str, Node], path: str
    ) -> None:
        self.report(fields["platform"], f"{path}.platform", platform_problem(name, platform))
        for key in ("gpu_count", "node_count"):
            written = self.integer(fields[key], f"{path}.{key}", "a whole number", minimum=0) if key in fields else None
            if written is not None:
                self.report(fields[key], f"{path}.{key}", count_problem(name, key, written))
        on_demand = self.boolean(fields["on_demand"], f"{path}.on_demand") if "on_demand" in fields else None
        if on_demand is not None:
            self.report(fields["on_demand"], f"{path}.on_demand", on_demand_problem(name, on_demand))
        budget = fields.get("budget_minutes")
        self.report(fields["splits"], f"{path}.splits", splits_problem(name, splits, has_budget=budget is not None))
        if budget is not None:
            self.report(budget, f"{path}.budget_minutes", budget_problem(splits))

    def budget(self, fields: dict[str, Node], path: str) -> float | None:
        if "budget_minutes" not in fields:
            return None
        minutes = self.number(fields["budget_minutes"], f"{path}.budget_minutes", "minutes")
        if minutes is not None and not 0 < minutes <= MAX_TIMEOUT_MINUTES:
            limit = "> 0" if minutes <= 0 else f"<= {MAX_TIMEOUT_MINUTES} (a week)"
            found = fields["budget_minutes"].value
            self.problem(fields["budget_minutes"], f"{path}.budget_minutes", f"expected minutes {limit}, found {found}")
        return minutes


def _resolve(
    reader: _CatalogReader, drafts: list[_Draft], settings: Catalog, db: TestDb, durations: Durations
) -> Catalog:
    """Check contexts, plan each family once (auto splits, derived timeouts), expand families to stages."""
    families: list[Family] = []
    for draft in drafts:
        if draft.context not in db.contexts:
            known = sorted(db.contexts)
            reader.problem(
                draft.nodes["context"],
                f"{draft.path}.context",
                f"expected a context defined in the test-db, found no context {draft.context!r}",
                hint=did_you_mean(draft.context, known) or f"the test-db defines {', '.join(known)}",
            )
            continue
        budget = draft.budget_minutes
        try:
            planned = plan_family(
                draft.name,
                db=db,
                context=draft.context,
                splits=draft.splits,
                budget_seconds=budget * 60 if budget is not None else None,
                durations=durations,
                arch=draft.arch,
                allow_empty=True,
            )
        except CiToolError as error:  # too few tests for the shards; a test longer than the budget
            reader.problem(
                draft.nodes["splits"],
                f"{draft.path}.splits",
                f"family {draft.name.name!r}: {error.message}",
                error.hint,
            )
            continue
        derived = draft.timeout_minutes is None
        timeout = settings.timeouts.minutes(planned.makespan_seconds) if derived else draft.timeout_minutes
        families.append(
            Family(
                draft.name,
                draft.platform,
                draft.context,
                planned.splits,
                budget,
                timeout or 0,
                derived,
                planned.makespan_seconds / 60,
                draft.arch,
                reader.where(draft.nodes["name"], draft.path),
            )
        )
    stages = tuple(Stage(family.name.with_shard(k), family) for family in families for k in range(1, family.splits + 1))
    catalog = Catalog(
        settings.file,
        tuple(families),
        stages,
        settings.timeouts,
        settings.multi_gpu_paths,
        settings.tag_triggers,
        settings.file_groups,
    )
    for index, group in enumerate(catalog.file_groups):
        for item, (node, pattern) in enumerate(zip(reader.group_nodes[index].value, group.stages, strict=True)):
            if not any(stage_glob_matches(pattern, name) for name in catalog.names):
                reader.problem(
                    node,
                    f"file_groups[{index}].stages[{item}]",
                    f"expected the stage glob {pattern!r} of file group {group.name!r} to match a stage, found none",
                    hint=did_you_mean(pattern, catalog.names) or "`ci-tool stages list` prints every stage",
                )
    return catalog


def _path_problem(path: str) -> str | None:
    if not path or path.startswith(("/", "./")) or any(char.isspace() for char in path):
        return "a repository-relative path or glob (no leading '/' or './', no blanks)"
    return None
