"""Which catalog stages render the perf-sanity cases, checked against their gates and configs. Pure but for
reading the configs a case id names.

    a perf case only a functional stage renders   it runs without its gate (regressions only recorded)
    a PerfSanity or Perf family rendering no case  its stages would gate nothing
    a case id whose config file is missing         (or whose config has no such case) it cannot collect

An entry renders perf cases when its path covers the perf-sanity test (`tests/perf`,
`tests/perf/test_perf_sanity.py`) or names one case (`...::test_e2e[<case id>]`). A `-k`/`-m` filter is not
evaluated: the path decides, so an entry that covers the test counts as rendering its cases.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ci_tool.errors import CiToolError, PerfError, StageError, TestDbError, did_you_mean
from ci_tool.perf.config import CASE_TEST, CONFIG_DIR, config_path, load_config, parse_case_id
from ci_tool.stages.block_reach import family_query
from ci_tool.stages.catalog import Catalog, Family
from ci_tool.stages.modes import TestMode
from ci_tool.testdb.check import covers
from ci_tool.testdb.model import Block, Entry, TestDb
from ci_tool.testdb.select import matches

GATED_MODES = (TestMode.PERF_SANITY, TestMode.PERF)


def perf_findings(catalog: Catalog, db: TestDb, *, root: Path) -> list[CiToolError]:
    """Every problem of the three kinds; `root`: the repository root the configs' folder is under."""
    findings: list[CiToolError] = []
    rendered_by_gated: set[str] = set()
    for block, entry in _perf_entries(db):
        families = [f for f in catalog.families if f.context == block.context and matches(block, family_query(f))]
        gated = [f for f in families if f.name.mode in GATED_MODES]
        rendered_by_gated.update(f.name.name for f in gated)
        if families and not gated:
            names = ", ".join(f.name.name for f in families)
            findings.append(TestDbError(
                f"expected a PerfSanity or Perf stage to render {_shown(entry)}, found only {names} "
                f"(functional: regressions are recorded, never gated)", where=entry.where,
                hint="move it to a perf-sanity context (a -PerfSanity family renders it), or list files outside "
                     f"{CASE_TEST.split('::')[0]}",
            ))  # fmt: skip
        findings += _config_findings(entry, root)
    for family in catalog.families:
        if family.name.mode in GATED_MODES and family.name.name not in rendered_by_gated:
            findings.append(_no_case(family))
    return findings


def _perf_entries(db: TestDb) -> Iterator[tuple[Block, Entry]]:
    for context in db.contexts.values():
        for block in context.blocks:
            for entry in block.entries:
                path = _path(entry)
                if covers(path, CASE_TEST) or covers(CASE_TEST, path):
                    yield block, entry


def _path(entry: Entry) -> str:
    return entry.line.test_id.split(" ", 1)[0].removeprefix("./").rstrip("/")


def _shown(entry: Entry) -> str:
    case_id = _case_id(entry)
    return f"perf case {case_id!r}" if case_id is not None else f"the perf cases under {_path(entry)!r}"


def _case_id(entry: Entry) -> str | None:
    path = _path(entry)
    prefix = CASE_TEST + "["
    return path[len(prefix) : -1] if path.startswith(prefix) and path.endswith("]") else None


def _config_findings(entry: Entry, root: Path) -> list[CiToolError]:
    case_id = _case_id(entry)
    if case_id is None:
        return []
    parsed = parse_case_id(case_id)
    if parsed is None:
        return [TestDbError(f"expected a perf case id <mode>-<config>-<server>-<client>, found {case_id!r}",
                            where=entry.where, hint="mode is gpu or cpu, e.g. gpu-gemma_like-pool4g-b80")]  # fmt: skip
    _, config, _ = parsed
    path = config_path(root, config)
    if not path.is_file():
        known = sorted(p.stem for p in (root / CONFIG_DIR).glob("*.yaml"))
        hint = did_you_mean(config, known) or f"add {CONFIG_DIR / (config + '.yaml')}, or fix the case id"
        return [TestDbError(f"expected the config {CONFIG_DIR / (config + '.yaml')} of perf case {case_id!r}, "
                            "found no such file", where=entry.where, hint=hint)]  # fmt: skip
    try:
        cases = [case.case_id for case in load_config(path).cases]
    except PerfError as error:
        return [error]
    if case_id in cases:
        return []
    hint = did_you_mean(case_id, cases) or f"its cases are {', '.join(cases)}"
    return [TestDbError(f"expected a case of {CONFIG_DIR / path.name}, found {case_id!r}", where=entry.where,
                        hint=hint)]  # fmt: skip


def _no_case(family: Family) -> StageError:
    kind = "PerfSanity" if family.name.mode is TestMode.PERF_SANITY else "Perf"
    return StageError(
        f"expected {kind} family {family.name.name!r} to render at least one perf case ({CASE_TEST}[...]) "
        f"from context {family.context!r}, found none",
        where=family.where,
        hint=f"add a case line to a block of {family.context!r} this family renders, or drop the {kind} tag",
    )
