"""Where `ci-tool waive verify` runs the waived tests: the catalog family (named, or the first whose render lists
them and that the executor can run), its plan narrowed to them, and the waive lines verifying lifts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ci_tool.errors import CiToolError, RunError, did_you_mean
from ci_tool.run.pipeline import runner_mismatch
from ci_tool.run.setup import LocalSetup
from ci_tool.run.verify import lifted, verify_lines, waives_of
from ci_tool.stages.catalog import Family
from ci_tool.stages.executors import Executor
from ci_tool.stages.stage_plan import StagePlan
from ci_tool.testdb.check import covers
from ci_tool.testdb.waives import Waive


def lifted_waives(test_ids: Sequence[str], waives: Sequence[Waive], family: Family) -> dict[str, list[Waive]]:
    """Each test's waive lines that hold on the family's GPU (what verifying lifts); an error for a test that
    has none there."""
    line_ids = Counter(w.where.line for w in waives if w.where.line is not None)
    lifting = {test_id: lifted(test_id, waives, family.name.gpu, line_ids=line_ids) for test_id in test_ids}
    for test_id, lines in lifting.items():
        if not lines:
            raise RunError(
                f"expected a waive of {test_id!r} that holds on {family.name.name}, found only waives for "
                + ", ".join(sorted({w.gpu or "every GPU" for w in waives_of(test_id, waives)})),
                hint="pass --stage with a family of the waive's GPU type",
            )
    return lifting


def choose_family(
    setup: LocalSetup, test_ids: Sequence[str], waives: Sequence[Waive], family_name: str | None
) -> tuple[Family, StagePlan]:
    """The family to run the tests in and its plan narrowed to them (see the command's --stage)."""
    families = [f for f in setup.loaded.catalog.families if f.name.is_test]
    if family_name is not None:
        named = [f for f in families if f.name.name == family_name]
        if not named:
            raise RunError(
                f"expected a test family of the catalog for --stage, found {family_name!r}",
                hint=did_you_mean(family_name, [f.name.name for f in families]) or "`ci-tool stages list` names them",
            )
        families = named
    listing: list[tuple[Family, StagePlan]] = []
    for family in families:
        if not all(any(w.applies_to(family.name.gpu) for w in waives_of(t, waives)) for t in test_ids):
            continue
        try:
            plan = replace(setup.planner, waives_file=None).family(family)  # the waives are what it lifts
        except CiToolError:  # a family whose context renders nothing here lists no test
            continue
        if all(any(covers(line.test_id, t) for line in plan.rendered) for t in test_ids):
            listing.append((family, plan))
    if not listing:
        raise RunError(
            f"expected a catalog family whose render lists {', '.join(test_ids)}, found none",
            hint="pass --stage FAMILY, or check the ids with `ci-tool testdb render`",
        )
    for family, plan in listing:
        if setup.config.executor is not Executor.LOCAL or runner_mismatch(family.name, setup.facts) is None:
            return family, verify_lines(plan, test_ids)
    family = listing[0][0]
    raise RunError(
        f"expected a family this machine can run, found only {', '.join(f.name.name for f, _ in listing)} "
        f"({runner_mismatch(family.name, setup.facts)})",
        hint="run it on a runner of that GPU type, or pass --executor slurm",
    )
