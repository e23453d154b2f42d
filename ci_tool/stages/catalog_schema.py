"""The stage catalog as written: one field table drives the key checks, the required keys, the value
readers, the hints and the rules, and `parse_catalog` reads `jenkins/stages.yml` text into a CatalogSpec.
Pure: no test-db, no durations (catalog_load.py resolves a spec against them).

Validation, every problem of the file collected and raised at once (`file:line:col (yaml.path): ...`, one
line each: errors.raise_all):
- unknown keys anywhere (a typo such as `split: 4` would otherwise run one shard), with did-you-mean;
- family names parse as test families (names.py), in today's spelling, each once, or name one of the
  non-test stages the runners know (the docs stage `GPU-Build_Docs`, `GPU-PackageSanityCheck-KEY`);
  `splits` is required of test families, `context` of all but the docs stage;
- each field's value reads as its field says (FAMILY_FIELDS, read by ci_tool/yaml_fields.py) and passes its
  rule (catalog_rules.py): counts and on_demand say what the name says, platforms suit the GPUs, perf-mode
  families run one shard, `splits: auto` comes with budget_minutes;
- tag triggers name a token some family carries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ci_tool.errors import CiToolError, StageError, Where, did_you_mean, raise_all
from ci_tool.stages.catalog import (
    FORMAT_VERSION,
    ChangeRules,
    CheckPolicy,
    FileGroup,
    TagTrigger,
    TextReader,
    TimeoutRule,
    carries,
    tokens_of,
)
from ci_tool.stages.catalog_rules import (
    Problem,
    budget_problem,
    context_problem,
    count_problem,
    non_test_splits_problem,
    on_demand_problem,
    platform_problem,
    splits_problem,
)
from ci_tool.stages.executors import AUTO_PREFIX, Executor
from ci_tool.stages.names import LEGACY_POST_MERGE, StageKind, StageName, parse_family_name
from ci_tool.stages.query import ARCHES, QueryValue
from ci_tool.stages.shard import AutoSplits, Splits
from ci_tool.sysinfo import KEY_KINDS
from ci_tool.testdb.lines import MAX_TIMEOUT_MINUTES
from ci_tool.yaml_fields import Field, Values, boolean, check_fields, choice, integer, read_fields, text
from ci_tool.yaml_nodes import NodeKind, NodeReader, bool_value, compose, describe, float_value, int_value, kind

MAX_MARGIN = 100  # a larger timeout margin is a typo (and 1e308 overflows the minutes)
MAX_SPLITS = 1000  # shards of one family; every one is a stage in the generated pipelines
_CONTEXT = re.compile(r"[A-Za-z0-9_]+")


def _context_problem(values: Values) -> Problem | None:
    context = str(values["context"])
    if _CONTEXT.fullmatch(context):
        return None
    return f"expected a context name (letters, digits, '_'), found {context!r}", None


def _arch_problem(values: Values) -> Problem | None:
    arch = str(values["arch"])
    if arch in ARCHES:
        return None
    return f"expected {' or '.join(ARCHES)}, found {arch!r}", did_you_mean(arch, ARCHES)


def _name(values: Values) -> StageName:
    name = values["name"]
    assert isinstance(name, StageName)  # checks run only on families whose name parsed
    return name


def _count_check(values: Values, key: str) -> Problem | None:
    written = values[key]
    assert isinstance(written, int)  # read by the COUNT reader
    return count_problem(_name(values), key, written)


def _executor(values: Values) -> Executor:
    executor = values.get("executor", Executor.LOCAL)
    assert isinstance(executor, Executor)  # read by the EXECUTOR reader
    return executor


def _splits(values: Values) -> Splits:
    splits = values.get("splits", 1)  # a non-test family's default
    assert isinstance(splits, int | AutoSplits)  # read by the SPLITS reader
    return splits


FAMILY_FIELDS: tuple[Field, ...] = (
    Field("name", lambda reader, node, path: read_name(reader, node, path), required=True, example="A10-PyTorch"),
    Field(
        "platform",
        text("a runner label"),
        required=True,
        example="a10",
        check=lambda v: platform_problem(_name(v), str(v["platform"]), _executor(v)),
    ),
    Field("context", text("a test-db context"), required=True, example="l0_a10", check=_context_problem),
    Field(
        "splits",
        lambda reader, node, path: read_splits(reader, node, path),
        required=True,
        example="1",
        check=lambda v: (
            non_test_splits_problem(_name(v), _splits(v))
            or splits_problem(_name(v), _splits(v), has_budget="budget_minutes" in v)
        ),
    ),
    Field(
        "budget_minutes",
        lambda reader, node, path: read_minutes(reader, node, path),
        check=lambda v: budget_problem(_splits(v)),
    ),
    Field("gpu_count", integer("a whole number", minimum=0), check=lambda v: _count_check(v, "gpu_count")),
    Field("node_count", integer("a whole number", minimum=0), check=lambda v: _count_check(v, "node_count")),
    Field("on_demand", boolean(), check=lambda v: on_demand_problem(_name(v), bool(v["on_demand"]))),
    Field("timeout_minutes", integer("minutes >= 1", minimum=1, maximum=MAX_TIMEOUT_MINUTES)),
    Field("arch", text("an architecture"), check=_arch_problem),
    Field("executor", choice(Executor, " or ".join(Executor)), example=Executor.SLURM.value),
    Field("parallel_tests", boolean()),
)
FAMILY_KEYS = tuple(f.key for f in FAMILY_FIELDS)
REQUIRED_FAMILY_KEYS = tuple(f.key for f in FAMILY_FIELDS if f.required)
NON_TEST_REQUIRED_KEYS = ("name", "platform")  # and `context` for package sanity (catalog_rules.context_problem)
# The non-test stages a catalog may hold: the runners know their jobs (run/jobs.py).
CATALOGED_NON_TEST = (StageKind.BUILD_DOCS, StageKind.PACKAGE_SANITY)
TOP_KEYS = (
    "version", "timeouts", "multi_gpu_paths", "tag_triggers", "file_groups", "change_rules", "checks", "platforms",
    "families",
)  # fmt: skip
CHECK_FIELDS = (
    Field("redundant_timeouts", boolean()),
    Field("stale_waives", boolean()),
    Field("stale_waives_exempt", lambda reader, node, path: _paths(reader, node, path)),
)
FACT_KEYS = tuple(KEY_KINDS)  # a platform's facts are what `ci-tool sysinfo` reports
_BAD = object()  # a fact that is not of its key's kind
_FACT_READERS: dict[NodeKind, Callable[[str], object]] = {  # the scalars a fact may be, and their values
    NodeKind.STR: str, NodeKind.INT: int_value, NodeKind.FLOAT: float_value, NodeKind.BOOL: bool_value,
    NodeKind.NULL: lambda _: None,
}  # fmt: skip
TIMEOUT_KEYS = ("margin", "minimum_minutes", "maximum_minutes")
FILE_GROUP_KEYS = ("name", "paths", "stages")
CHANGE_RULE_FIELDS = (
    *(Field(key, lambda reader, node, path: _paths(reader, node, path)) for key in ("tests", "docs", "out_of_scope")),
    Field("readers", lambda reader, node, path: _read_readers(reader, node, path)),
)


@dataclass(frozen=True)
class FamilySpec:
    """A family as written (the catalog resolves its shard count and timeout against the test-db)."""

    name: StageName  # shard is None
    platform: str
    context: str = ""  # none: the docs stage
    splits: Splits = 1
    budget_minutes: float | None = None
    gpu_count: int | None = None  # when written: what the name says
    node_count: int | None = None
    on_demand: bool | None = None
    timeout_minutes: int | None = None  # None: derived (TimeoutRule)
    arch: str = "x86_64"
    executor: Executor = Executor.LOCAL  # what runs its stages (executors.py)
    parallel_tests: bool = False  # its tests may run side by side in one stage (run/resources.py)
    wheres: Mapping[str, Where] = field(default_factory=dict, compare=False)  # key -> where it was written

    def where(self, key: str = "") -> Where:
        """Where a key was written (the family as a whole for ""; a key not written: the family)."""
        return self.wheres.get(key) or self.wheres[""]


@dataclass(frozen=True)
class CatalogSpec:
    """A catalog file as written and checked, before the test-db resolves it."""

    file: str
    families: tuple[FamilySpec, ...]
    timeouts: TimeoutRule = field(default_factory=TimeoutRule)
    multi_gpu_paths: tuple[str, ...] = ()
    tag_triggers: tuple[TagTrigger, ...] = ()
    file_groups: tuple[FileGroup, ...] = ()
    group_stage_wheres: tuple[tuple[Where, ...], ...] = field(default=(), compare=False)  # per group, per glob
    change_rules: ChangeRules = field(default_factory=ChangeRules)
    checks: CheckPolicy = field(default_factory=CheckPolicy)
    platforms: Mapping[str, Mapping[str, QueryValue]] = field(default_factory=dict)


def parse_catalog(text: str, *, file: str) -> CatalogSpec:
    """Validate catalog YAML text into a CatalogSpec; raise every problem at once."""
    spec, problems = read_catalog_spec(text, file=file)
    raise_all(problems, file)
    return spec


def parse_check_policy(text: str, *, file: str) -> CheckPolicy:
    """A checks file: `checks:` as a catalog writes it, alone (`testdb check --checks FILE`)."""
    reader = _CatalogReader(file)
    document = compose(text, file=file, error=StageError)
    top = reader.mapping(document, "", "a mapping with `checks:`", ("checks",)) if document is not None else None
    policy = reader.read_checks(top["checks"]) if top and "checks" in top else None
    if policy is None and not reader.problems:
        reader.problems.append(StageError("expected `checks:` in the checks file, found none", where=Where(file)))
    reader.raise_all()
    assert policy is not None  # raise_all raised otherwise
    return policy


def read_catalog_spec(text: str, *, file: str) -> tuple[CatalogSpec, list[CiToolError]]:
    """Catalog YAML text read as far as it can be: the spec of what is valid (a family with a problem left
    out) and every problem found. YAML that does not parse raises: nothing can be read past it."""
    reader = _CatalogReader(file)
    spec = reader.read(compose(text, file=file, error=StageError))
    return spec, reader.problems


class _CatalogReader(NodeReader):
    def __init__(self, file: str) -> None:
        super().__init__(file, StageError)

    def read(self, document: Node | None) -> CatalogSpec:
        empty = CatalogSpec(self.file, ())
        if document is None:
            message = f"expected `version: {FORMAT_VERSION}` and `families`, found an empty file"
            self.problems.append(StageError(message, where=Where(self.file)))
            return empty
        top = self.mapping(document, "", f"a mapping with `version: {FORMAT_VERSION}` and `families`", TOP_KEYS)
        if top is None:
            return empty
        version = top.get("version")
        if version is None or version.value != str(FORMAT_VERSION):
            found = describe(version) if version is not None else "none"
            hint = f"start the file with `version: {FORMAT_VERSION}`"
            self.problem(version or document, "version", f"expected version {FORMAT_VERSION}, found {found}", hint)
        families = self.read_families(top.get("families"), document)
        names = [family.name for family in families]
        groups, group_wheres = self.read_groups(top["file_groups"]) if "file_groups" in top else ((), ())
        return CatalogSpec(
            file=self.file,
            families=tuple(families),
            timeouts=self.read_timeouts(top["timeouts"]) if "timeouts" in top else TimeoutRule(),
            multi_gpu_paths=self.paths(top["multi_gpu_paths"], "multi_gpu_paths") if "multi_gpu_paths" in top else (),
            tag_triggers=self.read_triggers(top["tag_triggers"], names) if "tag_triggers" in top else (),
            file_groups=groups,
            group_stage_wheres=group_wheres,
            change_rules=self.read_change_rules(top["change_rules"]) if "change_rules" in top else ChangeRules(),
            checks=self.read_checks(top["checks"]) if "checks" in top else CheckPolicy(),
            platforms=self.read_platforms(top["platforms"]) if "platforms" in top else {},
        )

    def read_platforms(self, node: Node) -> dict[str, Mapping[str, QueryValue]]:
        what = "a mapping of platform label: the facts its runners report"
        platforms: dict[str, Mapping[str, QueryValue]] = {}
        for label, value in (self.mapping(node, "platforms", what, None) or {}).items():
            path = f"platforms.{label}"
            if label.startswith(AUTO_PREFIX):
                self.problem(value, path, f"expected a platform label without {AUTO_PREFIX!r}, found {label!r}",
                             f"write {label.removeprefix(AUTO_PREFIX)!r}: its facts serve both spellings")  # fmt: skip
                continue
            fields = self.mapping(value, path, "a mapping of sysinfo keys (`ci-tool sysinfo --json`)", FACT_KEYS)
            facts = {key: self.read_fact(key, fact, f"{path}.{key}") for key, fact in (fields or {}).items()}
            if fields is not None:
                platforms[label] = {key: fact for key, fact in facts.items() if fact is not _BAD}  # type: ignore[misc]
        return platforms

    def read_fact(self, key: str, node: Node, path: str) -> object:
        """One fact, of the kind `ci-tool sysinfo` reports for its key (_BAD, and a problem, when not)."""
        text = self.scalar(node, path, tuple(_FACT_READERS), KEY_KINDS[key].description)
        value = None if text is None else _FACT_READERS[kind(node)](text)
        if text is None or not KEY_KINDS[key].holds(value):
            if text is not None:
                self.mismatch(node, path, KEY_KINDS[key].description)
            return _BAD
        return value

    def read_checks(self, node: Node) -> CheckPolicy:
        what = "a mapping of redundant_timeouts and stale_waives (true or false) and stale_waives_exempt (paths)"
        found = read_fields(self, node, "checks", what, CHECK_FIELDS)
        return CheckPolicy(**found.values) if found else CheckPolicy()  # type: ignore[arg-type]  # read by field

    def read_change_rules(self, node: Node) -> ChangeRules:
        what = "a mapping of tests, docs and out_of_scope path lists, and readers"
        found = read_fields(self, node, "change_rules", what, CHANGE_RULE_FIELDS)
        return ChangeRules(**found.values) if found else ChangeRules()  # type: ignore[arg-type]  # read by field

    def paths(self, node: Node, path: str) -> tuple[str, ...]:
        return _paths(self, node, path)

    def read_timeouts(self, node: Node) -> TimeoutRule:
        what = "a mapping of margin, minimum_minutes and maximum_minutes"
        fields = self.mapping(node, "timeouts", what, TIMEOUT_KEYS) or {}
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
        maximum = None
        if "maximum_minutes" in fields:
            maximum = self.integer(
                fields["maximum_minutes"],
                "timeouts.maximum_minutes",
                f"minutes >= {minimum or default.minimum_minutes} (the minimum)",
                minimum=minimum or default.minimum_minutes,
                maximum=MAX_TIMEOUT_MINUTES,
            )
        return TimeoutRule(margin, minimum or default.minimum_minutes, maximum or default.maximum_minutes)

    def read_triggers(self, node: Node, names: list[StageName]) -> tuple[TagTrigger, ...]:
        fields = self.mapping(node, "tag_triggers", "a mapping of path: token", None) or {}
        tokens = sorted({token for name in names for token in tokens_of(name)})
        triggers = []
        for path, value in fields.items():
            key_path = f"tag_triggers.{path}"
            problem = _path_problem(path)
            token = self.scalar(value, key_path, (NodeKind.STR,), "a tag or backend token")
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

    def read_groups(self, node: Node) -> tuple[tuple[FileGroup, ...], tuple[tuple[Where, ...], ...]]:
        if not isinstance(node, SequenceNode) or not node.value:
            self.problem(node, "file_groups", f"expected a list of file groups, found {describe(node)}")
            return (), ()
        groups, wheres = [], []
        for index, item in enumerate(node.value):
            path = f"file_groups[{index}]"
            fields = self.mapping(item, path, "a file group (name, paths, stages)", FILE_GROUP_KEYS)
            if fields is None:
                continue
            missing = [key for key in FILE_GROUP_KEYS if key not in fields]
            if missing:
                self.problem(item, path, f"expected {', '.join(missing)} in the file group, found none")
                continue
            name = self.scalar(fields["name"], f"{path}.name", (NodeKind.STR,), "a group name")
            paths = self.paths(fields["paths"], f"{path}.paths")
            stages = self.strings(fields["stages"], f"{path}.stages", "stage names or globs", lambda _: None)
            if name is not None and paths and stages:
                groups.append(FileGroup(name, paths, stages))
                items = fields["stages"].value
                wheres.append(tuple(self.where(n, f"{path}.stages[{k}]") for k, n in enumerate(items)))
        return tuple(groups), tuple(wheres)

    def read_families(self, node: Node | None, document: Node) -> list[FamilySpec]:
        if node is None:
            hint = "add `families:` with one entry per stage family"
            self.problem(document, None, "expected a `families` list, found none", hint)
            return []
        if not isinstance(node, SequenceNode) or not node.value:
            self.problem(node, "families", f"expected a non-empty list of families, found {describe(node)}")
            return []
        families: list[FamilySpec] = []
        first_line: dict[str, int] = {}
        for index, item in enumerate(node.value):
            family = self.read_family(f"families[{index}]", item)
            if family is None:
                continue
            where = family.where("name")
            if family.name.name in first_line:
                message = f"expected each family once, found {family.name.name!r} again (first at line "
                self.problems.append(
                    StageError(
                        message + f"{first_line[family.name.name]})",
                        where=where,
                        hint="delete one of the two, or rename one",
                    )
                )
                continue
            first_line[family.name.name] = self.where(item, None).line or 0
            families.append(family)
        return families

    def read_family(self, path: str, node: Node) -> FamilySpec | None:
        written: dict[str, Node] = {}  # the name as read_fields reads it (a key's first value) names the family
        for key, value in node.value if isinstance(node, MappingNode) else []:
            if isinstance(key, ScalarNode):
                written.setdefault(key.value, value)
        label = str(written["name"].value) if "name" in written and kind(written["name"]) is NodeKind.STR else path
        name = _peek_name(written.get("name"))
        non_test = name is not None and not name.is_test
        found = read_fields(
            self,
            node,
            path,
            "a family (name, platform, context, splits)",
            FAMILY_FIELDS,
            required=NON_TEST_REQUIRED_KEYS if non_test else REQUIRED_FAMILY_KEYS,
            missing=lambda spec: (
                f"expected `{spec.key}` in family {label!r}, found none",
                f"add e.g. `{spec.key}: {spec.example}`",
            ),
        )
        if found is None or not found.complete:
            return None
        values = dict(found.values)
        if "executor" not in values and str(values.get("platform", "")).startswith(AUTO_PREFIX):
            values["executor"] = Executor.SLURM  # `auto:<pool>` names a Slurm pool: Slurm runs it unless said
        held = True
        if name is not None and non_test:
            problem = context_problem(name, "context" in values)
            if problem is not None:
                self.problem(found.nodes.get("context", found.nodes["name"]), f"{path}.context", *problem)
                held = False
        if not check_fields(self, path, FAMILY_FIELDS, found, values) or not held:
            return None
        wheres = {key: self.where(value, f"{path}.{key}") for key, value in found.nodes.items()}
        wheres[""] = self.where(found.nodes["name"], path)  # the family as a whole
        return FamilySpec(**values, wheres=wheres)  # type: ignore[arg-type]  # each value read by its field


def _peek_name(node: Node | None) -> StageName | None:
    """The family's name when it parses (read_name reports it when it does not)."""
    if node is None or kind(node) is not NodeKind.STR:
        return None
    try:
        return parse_family_name(str(node.value))
    except StageError:
        return None


def read_name(reader: NodeReader, node: Node, path: str) -> StageName | None:
    text = reader.scalar(node, path, (NodeKind.STR,), "a family name such as 'A10-PyTorch'")
    if text is None:
        return None
    try:
        name = parse_family_name(text, where=reader.where(node, path))
    except StageError as error:
        reader.problems.append(error)
        return None
    if not name.is_test and name.kind not in CATALOGED_NON_TEST:
        kind_words = name.kind.value.replace("_", " ")
        reader.problem(
            node,
            path,
            f"expected a test family name (GPU-Backend[-Tags]) or a docs or package-sanity stage, found the "
            f"{kind_words} stage {text!r}",
            hint="the catalog lists test families, `GPU-Build_Docs` and `GPU-PackageSanityCheck-KEY`; "
            "other build stages are not cataloged yet",
        )
        return None
    if LEGACY_POST_MERGE in text:
        reader.problem(
            node,
            path,
            f"expected today's spelling of the family name, found {text!r}",
            hint=f"write {name.canonical_name!r}",
        )
        return None
    return name


def read_splits(reader: NodeReader, node: Node, path: str) -> Splits | None:
    if kind(node) is NodeKind.STR and node.value == AutoSplits.AUTO.value:  # the catalog's word
        return AutoSplits.AUTO
    count = int_value(node.value) if kind(node) is NodeKind.INT else ""
    if isinstance(count, int) and 1 <= count <= MAX_SPLITS:
        return count
    hint = "write e.g. `splits: 2`, or `splits: auto` with `budget_minutes`"
    if isinstance(count, int) and count > MAX_SPLITS:
        hint = f"a family has at most {MAX_SPLITS} shards; {hint}"
    message = f"expected a shard count of at least 1, or auto, found {describe(node)}"
    reader.problem(node, path, message, hint=count if isinstance(count, str) and count else hint)
    return None


def read_minutes(reader: NodeReader, node: Node, path: str) -> float | None:
    minutes = reader.number(node, path, "minutes")
    if minutes is not None and not 0 < minutes <= MAX_TIMEOUT_MINUTES:
        limit = "> 0" if minutes <= 0 else f"<= {MAX_TIMEOUT_MINUTES} (a week)"
        reader.problem(node, path, f"expected minutes {limit}, found {node.value}")
        return None
    return minutes


def _read_readers(reader: NodeReader, node: Node, path: str) -> tuple[TextReader, ...]:
    fields = reader.mapping(node, path, "a mapping of test path: the paths it reads", None) or {}
    readers = []
    for test, value in fields.items():
        key_path = f"{path}.{test}"
        problem = _path_problem(test)
        if problem:
            reader.problem(value, key_path, f"expected a test path, {problem}, found {test!r}")
            continue
        reads = _paths(reader, value, key_path)
        if reads:
            readers.append(TextReader(test, reads))
    return tuple(readers)


def _paths(reader: NodeReader, node: Node, path: str) -> tuple[str, ...]:
    return reader.strings(node, path, "paths", _path_problem)


def _path_problem(path: str) -> str | None:
    if not path or path.startswith(("/", "./")) or any(char.isspace() for char in path):
        return "a repository-relative path or glob (no leading '/' or './', no blanks)"
    return None
