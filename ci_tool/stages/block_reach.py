"""Which test-db blocks the catalog's stages reach, and which stages render nothing. Pure.

A stage renders a block when its query matches the block's condition. The stage-derived keys are known
here (stage, backend, orchestrator, auto_trigger, system_gpu_count, gpu; cpu on CPU stages), over what the
catalog says the family's platform reports (its `platforms:` facts: a B200 pool that reports `B100`); a
key the query lacks matches anything, as sysinfo keys do until a runner reports them. So a block is
unreachable when every stage on its context contradicts it on a stage-derived key: a `stage: post_merge,
backend: autodeploy` block with no Post-Merge AutoDeploy stage never runs.
"""

from __future__ import annotations

from ci_tool.errors import CiToolError, StageError, TestDbError
from ci_tool.stages.catalog import Catalog, Family
from ci_tool.stages.query import render_query
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.select import Query, matches, normalize_query


def family_query(family: Family) -> Query:
    """The query every stage of a family renders with before a machine's probe: the name's facts over its
    platform's."""
    return normalize_query(render_query(family.name, family.facts, arch=family.arch))


def unreachable_blocks(catalog: Catalog, db: TestDb) -> list[CiToolError]:
    """Contexts no family names, and blocks no family on their context renders."""
    findings: list[CiToolError] = []
    by_context: dict[str, list[Family]] = {}
    for family in catalog.families:
        by_context.setdefault(family.context, []).append(family)
    for context in db.contexts.values():
        families = by_context.get(context.name, [])
        if not families:
            findings.append(
                TestDbError(
                    f"expected a stage of {catalog.file} to render context {context.name!r}, found none",
                    where=context.where,
                    hint=f"add a family with `context: {context.name}`, or delete the context",
                )
            )
            continue
        queries = [family_query(family) for family in families]
        for block in context.blocks:
            if not any(matches(block, query) for query in queries):
                names = ", ".join(family.name.name for family in families)
                findings.append(
                    TestDbError(
                        f"expected a stage of {catalog.file} to render this block, found none of the stages "
                        f"on {context.name!r} matching its condition ({names})",
                        where=block.where,
                        hint="its tests never run: add a family whose name matches the condition, or fix the condition",
                    )
                )
    return findings


def empty_families(catalog: Catalog, db: TestDb) -> list[CiToolError]:
    """Families whose context renders no test for their query (their stages would fail)."""
    findings: list[CiToolError] = []
    for family in catalog.families:
        context = db.contexts.get(family.context)
        if context is None:
            continue
        query = family_query(family)
        if not any(matches(block, query) and block.entries for block in context.blocks):
            shown = ", ".join(f"{key}={value}" for key, value in query.items())
            findings.append(
                StageError(
                    f"expected family {family.name.name!r} to render at least one test from context "
                    f"{family.context!r}, found none for {shown}",
                    where=family.where,
                    hint="add a block for it to the context, or point the family at another context",
                )
            )
    return findings
