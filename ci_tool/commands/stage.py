"""`ci-tool stage parse`: what the stage-name grammar reads from stage names (more sub-verbs come later)."""

from __future__ import annotations

import json

import click

from ci_tool.stages.names import StageName, parse_stage_name


@click.group()
def stage() -> None:
    """Parse and inspect stage names."""


@stage.command("parse")
@click.argument("names", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object for one name, else an array.")
def parse_command(names: tuple[str, ...], as_json: bool) -> int:
    """Print what each stage name means: GPU, counts, backend, tags, post-merge, shard and mode."""
    parsed = [parse_stage_name(name) for name in names]
    if as_json:
        payload = parsed[0].to_json() if len(parsed) == 1 else [p.to_json() for p in parsed]
        click.echo(json.dumps(payload, indent=2))
    else:
        for stage_name in parsed:
            click.echo(describe(stage_name))
    return 0


def describe(stage_name: StageName) -> str:
    """One line for people: `A10-PyTorch-1: test stage, gpu A10 x1, 1 node, backend pytorch, ...`."""
    parts = [f"{stage_name.kind.value.replace('_', ' ')} stage"]
    if stage_name.gpu is not None:
        parts.append(f"gpu {stage_name.gpu} x{stage_name.gpu_count}")
    parts.append(f"{stage_name.node_count} node{'s' if stage_name.node_count != 1 else ''}")
    if stage_name.backend is not None:
        parts.append(f"backend {stage_name.backend}")
    if stage_name.tags:
        parts.append(f"tags {' '.join(stage_name.tags)}")
    parts.append("post-merge" if stage_name.post_merge else "pre-merge")
    if stage_name.shard is not None:
        parts.append(f"shard {stage_name.shard}")
    mode = f"mode {stage_name.mode.value}"
    parts.append(mode + (" (functional-only: perf never fails it)" if stage_name.functional_only else ""))
    return f"{stage_name.name}: {', '.join(parts)}"
