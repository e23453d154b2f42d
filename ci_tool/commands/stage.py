"""`ci-tool stage parse|show|select`: what a stage name means; what a catalog stage would run; which stages
a `/bot run` request selects."""

from __future__ import annotations

import importlib
import json
import shlex
import tempfile
from dataclasses import replace
from pathlib import Path

import click

from ci_tool import gitinfo, sysinfo
from ci_tool.atomic import append_text
from ci_tool.change.build import GitRange, read_change
from ci_tool.change.git_read import merged_waives
from ci_tool.commands.catalog_inputs import catalog_options, echo_errors, facts_line, load, pull_request_options
from ci_tool.commands.history_options import history_option
from ci_tool.errors import HistoryError, StageError
from ci_tool.generate.outputs import github_outputs
from ci_tool.gitinfo import CodeVersion
from ci_tool.history.locator import History
from ci_tool.history.store import history_path
from ci_tool.json_file import read_json
from ci_tool.layout import RESULTS_ROOT, waives_file_of
from ci_tool.perf.baselines import BASELINE_DIR
from ci_tool.perf.blind_gate import blind_gate_line, throughput_baselined
from ci_tool.run.invocation import planned_invocations
from ci_tool.run.likelihood import read_likelihood
from ci_tool.run.reuse_choice import plan_reuse
from ci_tool.run.session import SessionConfig
from ci_tool.run.stage_inputs import catalog_inputs
from ci_tool.stages.catalog import Stage, TimeoutRule
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.cbts import CbtsScope
from ci_tool.stages.durations import Durations, estimate_seconds
from ci_tool.stages.engines import Engine
from ci_tool.stages.names import StageName, parse_stage_name
from ci_tool.stages.priority import Likelihood
from ci_tool.stages.record import record_json
from ci_tool.stages.select import select_for_change
from ci_tool.stages.selection_request import SelectionRequest, Step, request_from_json
from ci_tool.stages.stage_plan import StagePlan

RUN_ID = "<run-id>"  # chosen when the run starts


@click.group()
def stage() -> None:
    """Parse stage names, show what a stage would run, select stages for a request."""


stage.add_command(importlib.import_module("ci_tool.commands.stage_run").run_command)  # `stage run`: ci_tool/run
stage.add_command(importlib.import_module("ci_tool.commands.stage_lost").lost_command)  # `stage lost`: run/lost.py


@stage.command("parse")
@click.argument("names", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object for one name, else an array.")
def parse_command(names: tuple[str, ...], as_json: bool) -> int:
    """Print what each stage name means: GPU, counts, backend, tags, post-merge, shard and mode. Every name
    is parsed: the good ones are printed, each bad one is an error line, and any bad one exits 1."""
    parsed: list[StageName] = []
    errors: list[StageError] = []
    for name in names:
        try:
            parsed.append(parse_stage_name(name))
        except StageError as error:
            errors.append(error)
    if as_json and parsed:
        payload = parsed[0].to_json() if len(names) == 1 else [p.to_json() for p in parsed]
        click.echo(json.dumps(payload, indent=2))
    elif not as_json:
        for stage_name in parsed:
            click.echo(describe(stage_name))
    for problem in errors:
        click.echo(f"error: {problem}", err=True)
    return 1 if errors else 0


def describe(stage_name: StageName) -> str:
    """One line for people: `A10-PyTorch-1: test stage, gpu A10 x1, 1 node, backend pytorch, ...`."""
    parts = [f"{stage_name.kind.value.replace('_', ' ')} stage"]
    if stage_name.gpu is not None:
        parts.append(f"gpu {stage_name.gpu} x{stage_name.gpu_count}")
    parts.append(f"{stage_name.node_count} node{'s' if stage_name.node_count != 1 else ''}")
    if stage_name.backend is not None:
        parts.append(f"backend {stage_name.backend}")
    if stage_name.selection_tags:
        parts.append(f"tags {' '.join(stage_name.selection_tags)}")
    if stage_name.topology:
        parts.append(f"topology {stage_name.topology} (descriptive)")
    parts.append("post-merge" if stage_name.post_merge else "pre-merge")
    if stage_name.shard is not None:
        parts.append(f"shard {stage_name.shard}")
    mode = f"mode {stage_name.mode.value}"
    parts.append(mode + (" (functional-only: perf never fails it)" if stage_name.functional_only else ""))
    if stage_name.policy.runs_alone:
        parts.append("runs alone on its host")
    return f"{stage_name.name}: {', '.join(parts)}"


@stage.command("show")
@click.argument("name")
@catalog_options
@click.option(
    "--system-info",
    "system_info",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Render for the machine these facts (`ci-tool sysinfo --json`) describe, under the stage's query "
    "[default: the stage name's facts only].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as one JSON object.")
@history_option
def show_command(
    name: str,
    catalog_path: Path,
    test_db: Path,
    durations_path: Path | None,
    system_info: Path | None,
    as_json: bool,
    history_file: Path | None,
) -> int:
    """The dry run before asking for a GPU: NAME's query, rendered list, shard, predicted minutes, mode,
    the order its tests run in (the history's recent failures first), and the pytest command lines
    `ci-tool stage run` would start."""
    loaded = load(catalog_path, test_db, durations_path)
    found = loaded.catalog.stage(name)
    facts = sysinfo.load_sysinfo_file(system_info) if system_info is not None else None
    waives = str(waives_file_of(test_db)) if waives_file_of(test_db).is_file() else None
    planner = replace(loaded.planner, sysinfo=facts, waives_file=waives, likelihood=_likelihood(history_file))
    plan = planner.stage(found)
    commands = pytest_commands(plan)
    if as_json:
        click.echo(json.dumps(_show_json(found, plan, commands), indent=2))
        return 0
    said = facts_line(system_info, platform=found.platform, platform_facts=found.family.facts is not None)
    timeouts = loaded.catalog.timeouts
    click.echo(_show_text(found, plan, commands, loaded.durations, facts=said, timeouts=timeouts), nl=False)
    return 0


def _likelihood(history_file: Path | None) -> Likelihood:
    """The order's inputs from the history; a show is a preview, so a history it cannot read (a server that
    is down) costs only the order, with a warning, not the show."""
    try:
        return read_likelihood(history_path(history_file), None)
    except HistoryError as error:
        click.echo(f"warning: the order shown is the list's, the history could not be read: {error}", err=True)
        return Likelihood()


def pytest_commands(plan: StagePlan) -> list[list[str]]:
    """The pytest processes a run of the plan starts, in order (the runner's own invocations): the regular
    lines in one, each ISOLATION line alone; results go under `.ci-tool/runs/<run-id>/<stage>`."""
    # A preview of the session `ci-tool stage run` would start here: its settings from the one constructor,
    # less what a preview never shows (the history, flaky signatures, touch recording).
    config = SessionConfig(rootdir=Path("."), results_root=RESULTS_ROOT, history=history_path(None), sysinfo={},
                           flaky_signatures=())  # fmt: skip
    settings = config.stage_settings(plan.name, results_dir=RESULTS_ROOT / RUN_ID / plan.name.name, run_id=RUN_ID,
                                     preview=True)  # fmt: skip
    return [
        [*(f"{key}={value}" for key, value in inv.variables.items()), *inv.command(settings.python)]
        for inv in planned_invocations(plan, settings)
    ]


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min ({seconds:.0f} s)"


def _show_text(
    found: Stage, plan: StagePlan, commands: list[list[str]], durations: Durations, *, facts: str, timeouts: TimeoutRule
) -> str:
    family = found.family
    basis = timeouts.explain(family.predicted_minutes * 60) if family.timeout_derived else "written in the catalog"
    timeout = f"{found.timeout_minutes} min ({basis})"
    shard = f"shard {plan.shard} of {plan.shards}" if plan.shard is not None else "the whole list (not sharded)"
    estimates = estimate_seconds([line.test_id for line in plan.lines], durations)
    unknown = len(estimates.unknown)
    blind = blind_gate_line(found.name, throughput_baselined(BASELINE_DIR))
    lines = [
        f"{found.name.name}: {shard}, on {found.platform} ({found.arch}), mode {found.mode.value}, timeout {timeout}",
        *([blind] if blind else []),
        facts,
        "query:",
        "  " + " ".join(f"{key}={value}" for key, value in plan.query.items()),
        f"rendered {plan.context}: {len(plan.rendered)} line(s)",
        *(f"  {line.raw}" for line in plan.rendered),
        f"this stage runs {len(plan.lines)} line(s), predicted {_minutes(plan.predicted_seconds)}"
        + (f"; {unknown} without a recorded duration, priced at their folders' median" if unknown else ""),
        *(f"  {line.raw}" for line in plan.lines),
        plan.priority.summary,
        f"pytest ({len(commands)} process(es), from the repository root; {RUN_ID} is chosen when the run starts):",
        *(f"  {shlex.join(command)}" for command in commands),
    ]
    return "\n".join(lines) + "\n"


def _show_json(found: Stage, plan: StagePlan, commands: list[list[str]]) -> dict[str, object]:
    return {
        **found.to_json(),
        "query": dict(plan.query),
        "rendered": [line.raw for line in plan.rendered],
        "lines": [line.raw for line in plan.lines],
        "isolated": [line.raw for line in plan.isolated],
        "sharded": plan.shard is not None,
        "predicted_seconds": round(plan.predicted_seconds, 3),
        "predicted_minutes": round(plan.predicted_minutes, 3),
        "pytest_args": list(plan.pytest_args),
        "order": {
            "summary": plan.priority.summary,
            "first": [{"test_id": ranked.test_id, "tier": ranked.tier.name.lower()} for ranked in plan.priority.first],
        },
        "commands": commands,
        "perf_gate_blind": blind_gate_line(found.name, throughput_baselined(BASELINE_DIR)) or None,
    }


@stage.command("select")
@click.option(
    "--request",
    "request_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help='The parsed /bot run request: {"command": "run", "flags": {...}} (`ci-tool bot parse --json`).',
)
@catalog_options
@pull_request_options
@click.option(
    "--engine",
    type=click.Choice([engine.value for engine in Engine]),
    default=Engine.LOCAL.value,
    show_default=True,
    help="Where the stages will run: options it cannot honour are errors.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the selection as one JSON object.")
@history_option
@click.option(
    "--github-output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append the GitHub Actions outputs (matrices, fail_fast, blocked stages) to this file ($GITHUB_OUTPUT).",
)
def select_command(
    request_path: Path,
    catalog_path: Path,
    test_db: Path,
    durations_path: Path | None,
    base: str | None,
    head: str | None,
    labels: tuple[str, ...],
    engine: str,
    as_json: bool,
    history_file: Path | None,
    github_output: Path | None,
) -> int:
    """Resolve a request into the stages to run (the one selection CI and the bot share): the stages,
    the ones blocked until an approval label, fail-fast and each stage's run options, and what
    change-based selection made of the changed files; exit 1 when it names stages the catalog does not
    have or options the engine cannot honour."""
    request = request_from_json(read_json(request_path, name="the request", error=StageError), source=str(request_path))
    loaded = load(catalog_path, test_db, durations_path)
    catalog = loaded.catalog
    history = history_path(history_file)
    changes = read_change(GitRange(base, head), test_db=test_db, history=history) if base else None
    waives = waives_file_of(test_db)
    passed = _passed_on_selection(
        history, root=Path.cwd(), request=request, loaded=loaded, waives=waives, base=base, head=head
    )
    selection = select_for_change(
        loaded, request, engine=Engine(engine), changes=changes, labels=labels, passed_stages=passed
    )
    echo_errors(selection.errors)
    if as_json:  # the run record (stages/record.py): the selection and the commits it was made on
        root = Path.cwd()
        base_commit = gitinfo.commit_of(root, base) if base is not None else None
        head_commit = gitinfo.commit_of(root, head or "HEAD")  # the commit selected for, not the checkout's
        click.echo(json.dumps(record_json(selection, head=head_commit, base=base_commit), indent=2))
    else:
        narrowing = selection.narrowing
        if narrowing is not None and narrowing.scope is not CbtsScope.OFF:
            click.echo("".join(f"step {Step.CBTS.value}: {reason}\n" for reason in narrowing.reasons), nl=False)
        for verdict in selection.verdicts:
            mark = "+" if verdict.selected else "-"
            click.echo(f"{mark} {verdict.stage}  (step {verdict.step.value}: {verdict.reason})")
    if selection.errors:
        return 1
    if github_output is not None:
        append_text(github_output, github_outputs(catalog, selection), what="the GitHub outputs")
    return 0


def _passed_on_selection(
    history: History,
    *,
    root: Path,
    request: SelectionRequest,
    loaded: LoadedCatalog,
    waives: Path | None,
    base: str | None,
    head: str | None,
) -> dict[str, str]:
    """The stages a selection made at `root` (the plan job of a pipeline) reuses: those passed over every run
    of the commit `head` names (the checkout's code without it), with each stage's inputs as its `ci-tool
    stage run` will have them (the `waives` file merged with the tip of `base`'s, with `base`)."""
    if head is None:
        code = gitinfo.code_version(root)
    else:
        commit = gitinfo.commit_of(root, head)
        code = CodeVersion(commit) if commit else None
    with tempfile.TemporaryDirectory() as folder:  # the digests read the merged waives: they are made in here
        waives_file = str(waives) if waives is not None and waives.is_file() else None
        if base is not None and waives is not None and not request.disable_reuse_test and code is not None:
            merged = Path(folder) / "waives.txt"
            merged.write_text(merged_waives(waives, base=base, root=root).text, encoding="utf-8")
            waives_file = str(merged)
        inputs_of = catalog_inputs(loaded, waives_file)
        reuse = plan_reuse(
            history, code=code, scope=None, inputs_of=inputs_of, disabled=request.disable_reuse_test, tests=False
        )
        return dict(reuse.passed_stages)
