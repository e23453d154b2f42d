"""The `ci-tool` entry point: a click group whose verbs live one per module in `ci_tool.commands`.

Verbs load lazily so that `ci-tool stage parse` does not pay for importing torch or jinja2.  This is
the only place that turns exceptions into exit codes: 1 for our errors, 2 for usage, 130 for Ctrl-C (and
for SIGTERM and SIGHUP, which take the Ctrl-C path: ci_tool.interrupts).
"""

from __future__ import annotations

import importlib
import sys

import click

from ci_tool import __version__, interrupts
from ci_tool.crash_log import write_crash_log
from ci_tool.errors import CiToolError

# verb -> "module:attribute" of its click command; `ci-tool --help` lists them in this order.
COMMANDS: dict[str, str] = {
    "testdb": "ci_tool.commands.testdb:testdb",
    "sysinfo": "ci_tool.commands.sysinfo:sysinfo",
    "bot": "ci_tool.commands.bot:bot",
    "stage": "ci_tool.commands.stage:stage",
    "stages": "ci_tool.commands.stages:stages",
    "shard": "ci_tool.commands.shard:shard",
    "history": "ci_tool.commands.history:history",
    "flaky": "ci_tool.commands.flaky:flaky",
    "waive": "ci_tool.commands.waive:waive",
    "durations": "ci_tool.commands.durations:durations",
    "report": "ci_tool.commands.report:report",
    "perf": "ci_tool.commands.perf:perf",
    "site": "ci_tool.commands.site:site",
    "run": "ci_tool.commands.run:run",
    "generate": "ci_tool.commands.generate:generate",
    "build": "ci_tool.commands.build:build",
}


class LazyGroup(click.Group):
    """A click group that imports a verb's module only when that verb runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ci-tool")
def cli() -> None:
    """CI orchestration and test-list management for GPU projects."""


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (the console script passes it to sys.exit)."""
    try:
        with interrupts.terminating_signals_interrupt():
            result = cli.main(args=argv, prog_name="ci-tool", standalone_mode=False)
    except click.exceptions.Exit as done:
        return done.exit_code
    except click.ClickException as usage:  # UsageError and friends: bad flags, missing arguments
        usage.show()
        return usage.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        return 130
    except CiToolError as error:
        click.echo(f"error: {error}", err=True)
        return 1
    except BrokenPipeError:  # `ci-tool ... | head` closed the pipe: not an error of ours
        sys.stderr.close()
        return 0
    except Exception as bug:  # a bug of ours: keep the user's terminal clean, keep the evidence
        log_path = write_crash_log()
        click.echo(f"error: unexpected {type(bug).__name__}: {bug} (traceback written to {log_path})", err=True)
        return 1
    return result if isinstance(result, int) else 0
