"""`ci-tool sysinfo`: what this machine reports to test-db queries."""

from __future__ import annotations

import json

import click

from ci_tool.sysinfo import probe


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the input of --system-info).")
def sysinfo(as_json: bool) -> int:
    """Probe this machine: GPU, GPU count and memory, compute capability, CPU, distro, host memory."""
    facts = probe()
    if as_json:
        click.echo(json.dumps(facts, indent=2, sort_keys=True))
    else:
        width = max(len(key) for key in facts)
        for key in sorted(facts):
            value = facts[key]
            shown = "null" if value is None else str(value).lower() if isinstance(value, bool) else value
            click.echo(f"{key:<{width}}  {shown}")
    return 0
