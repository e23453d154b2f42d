"""Resolve a catalog (catalog_schema.parse_catalog) against the test-db and durations into a Catalog.

    each family's context must exist in the test-db (the docs stage has none: it renders no list);
    its list is rendered (the facts its platform's runners report, else the stage name's) and estimated by
    the planner the loaded catalog keeps (a later plan of the family renders it no second time); only a
    `splits: auto` family is sharded, as deciding its count is a sharding question:
      splits: auto     -> the smallest count whose split fits budget_minutes (shard.shards_for_budget)
      no timeout       -> TimeoutRule over the slowest shard of a greedy split (shard.greedy_makespan): an
                          upper bound of the balanced split a run computes, without computing it
      a sharded family with more shards than tests loads: its stage names stay (people type them) and the
      shards past the tests' count are empty (a run of one passes, saying so);
    each file group's stage globs must match some stage.

A context that renders nothing is not a load error: `ci-tool testdb check` reports it. Every problem is
collected, the schema's and the resolution's together (a family the schema refused is not resolved; the
others are), and all are raised at once (errors.raise_all): a catalog is fixed in one pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tool.errors import CiToolError, StageError, did_you_mean, raise_all
from ci_tool.layout import durations_file_of
from ci_tool.stages.catalog import STAGES_LIST_HINT, Catalog, Family, FamilyList, Stage, stage_glob_matches
from ci_tool.stages.catalog_schema import CatalogSpec, FamilySpec, read_catalog_spec
from ci_tool.stages.durations import Durations, load_durations
from ci_tool.stages.executors import pool_of
from ci_tool.stages.planner import Planner
from ci_tool.stages.shard import AutoSplits, greedy_makespan, shards_for_budget
from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.model import TestDb
from ci_tool.text_file import read_text


@dataclass(frozen=True)
class LoadedCatalog:
    """The catalog with the planner it was resolved by (the test-db and durations; the renders it made)."""

    catalog: Catalog
    planner: Planner

    @property
    def db(self) -> TestDb:
        return self.planner.db

    @property
    def durations(self) -> Durations:
        return self.planner.durations


def open_catalog(
    catalog_path: str | Path,
    test_db_path: str | Path,
    durations_path: str | Path | None = None,
    *,
    test_db_texts: Mapping[str, str | None] | None = None,
) -> LoadedCatalog:
    """Load the test-db (`test_db_texts` in place of its files: load_test_db), the durations
    (`<test-db>/.test_durations` when it exists) and the catalog."""
    db = load_test_db(test_db_path, texts=test_db_texts)
    if durations_path is None:
        default = durations_file_of(Path(test_db_path))
        durations: Durations = load_durations(default) if default.is_file() else {}
    else:
        durations = load_durations(durations_path)
    planner = Planner(db, durations)
    return LoadedCatalog(load_catalog(catalog_path, planner), planner)


def load_catalog(path: str | Path, planner: Planner) -> Catalog:
    """Read, validate and resolve a catalog file; raise its every problem at once."""
    text = read_text(path, name="the stage catalog", error=StageError)
    return read_catalog(text, planner, file=str(path))


def read_catalog(text: str, planner: Planner, *, file: str) -> Catalog:
    """Validate catalog YAML text and resolve it against the planner's test-db and durations."""
    spec, problems = read_catalog_spec(text, file=file)
    return resolve_catalog(spec, planner, problems=problems)


def resolve_catalog(spec: CatalogSpec, planner: Planner, *, problems: list[CiToolError] | None = None) -> Catalog:
    """The catalog `spec` describes, its families resolved against the planner's test-db and durations (see the
    module docstring); `problems`: the schema's, raised with the resolution's."""
    problems = list(problems or ())
    families = [family for written in spec.families if (family := _resolve(written, spec, planner, problems))]
    unresolved = [written.name.name for written in spec.families if written.name not in {f.name for f in families}]
    stages = tuple(stage for family in families for stage in family_stages(family))
    catalog = Catalog(
        spec.file,
        tuple(families),
        stages,
        spec.timeouts,
        spec.multi_gpu_paths,
        spec.tag_triggers,
        spec.file_groups,
        spec.change_rules,
        spec.checks,
        spec.platforms,
    )
    for group, wheres in zip(catalog.file_groups, spec.group_stage_wheres, strict=True):
        for pattern, where in zip(group.stages, wheres, strict=True):
            # a family with a problem of its own has no stages: a glob meant for it is not a second problem
            meant = (*catalog.names, *unresolved, *(f"{name}-1" for name in unresolved))
            if not any(stage_glob_matches(pattern, name) for name in meant):
                problems.append(
                    StageError(
                        f"expected the stage glob {pattern!r} of file group {group.name!r} to match a stage, "
                        "found none",
                        where=where,
                        hint=did_you_mean(pattern, catalog.names) or STAGES_LIST_HINT,
                    )
                )
    raise_all(problems, spec.file)
    return catalog


def family_stages(family: Family) -> tuple[Stage, ...]:
    """A test family's stages `<name>-1 .. <name>-<splits>`; a non-test family's one stage of its name."""
    if not family.name.is_test:
        return (Stage(family.name, family),)
    return tuple(Stage(family.name.with_shard(k), family) for k in range(1, family.splits + 1))


def _resolve(written: FamilySpec, spec: CatalogSpec, planner: Planner, problems: list[CiToolError]) -> Family | None:
    """One family's shard count and timeout, from its render; None (and a problem) when it cannot be."""
    name = written.name
    if not written.context:  # the docs stage: no list to render or predict
        return Family(name, written.platform, "", 1, written.timeout_minutes or spec.timeouts.minimum_minutes,
                      written.timeout_minutes is None, 0.0, written.arch, written.where())  # fmt: skip
    if written.context not in planner.db.contexts:
        known = sorted(planner.db.contexts)
        problems.append(
            StageError(
                f"expected a context defined in the test-db, found no context {written.context!r}",
                where=written.where("context"),
                hint=did_you_mean(written.context, known) or f"the test-db defines {', '.join(known)}",
            )
        )
        return None
    facts = spec.platforms.get(pool_of(written.platform))
    found = planner.render(FamilyList(name, written.context, written.arch, facts), allow_empty=True)
    ids, seconds = found.test_ids, found.seconds
    sharded = name.is_test and name.policy.sharded and bool(ids)
    try:
        if written.splits is AutoSplits.AUTO:
            budget = (written.budget_minutes or 0) * 60
            splits = shards_for_budget(ids, seconds, budget) if sharded else 1
        else:
            splits = written.splits  # more shards than tests: the extra shards are empty (shard.plan_shards)
    except CiToolError as error:  # a test longer than the budget
        problems.append(
            StageError(f"family {name.name!r}: {error.message}", where=written.where("splits"), hint=error.hint)
        )
        return None
    slowest = greedy_makespan(ids, seconds, splits) if sharded else sum(seconds)
    derived = written.timeout_minutes is None
    return Family(
        name=name,
        platform=written.platform,
        context=written.context,
        splits=splits,
        timeout_minutes=spec.timeouts.minutes(slowest) if written.timeout_minutes is None else written.timeout_minutes,
        timeout_derived=derived,
        predicted_minutes=slowest / 60,
        arch=written.arch,
        where=written.where(),
        executor=written.executor,
        parallel_tests=written.parallel_tests,
        facts=facts,
    )
