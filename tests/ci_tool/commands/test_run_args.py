"""`ci-tool run` takes /bot run flags given as its own arguments as the comment (commands/run.py)."""

from __future__ import annotations

import click
import pytest

from ci_tool.commands.run import bot_flags_as_comment, run

OWN = {opt for param in run.params for opt in param.opts}

ARGS = [
    ("no arguments", [], []),
    ("a whole comment", ["/bot run --post-merge"], ["/bot run --post-merge"]),
    ("one switch", ["--post-merge"], ["--", "--post-merge"]),
    ("flags in one argument", ['--stage-list "CPU-Generic-1"'], ["--", '--stage-list "CPU-Generic-1"']),
    ("a list the shell unquoted", ["--stage-list", "CPU-Generic-1,A10-*"],
     ["--", '--stage-list "CPU-Generic-1,A10-*"']),
    ("a list still quoted", ["--stage-list", '"A"'], ["--", '--stage-list "A"']),
    ("an id after --reuse-test", ["--reuse-test", "4711"], ["--", "--reuse-test 4711"]),
    ("own options stay", ["--base", "main", "--post-merge", "--label", "x"], ["--base", "main", "--label", "x", "--",
                                                                              "--post-merge"]),
    ("own option with =", ["--post-merge", "--base=main"], ["--base=main", "--", "--post-merge"]),
    ("the user's -- first", ["--", "--post-merge"], ["--", "--post-merge"]),
    ("a quote in a text value", ["--comment", 'say "hi"'], ["--", '--comment "say \\"hi\\""']),
    ("no /bot flag", ["--no-such"], ["--no-such"]),
    ("help", ["--help"], ["--help"]),
]  # fmt: skip


@pytest.mark.parametrize(("args", "expected"), [a[1:] for a in ARGS], ids=[a[0] for a in ARGS])
def test_bot_flags_become_the_comment(args: list[str], expected: list[str]) -> None:
    assert bot_flags_as_comment(args, own_options=OWN) == expected


def test_no_bot_flag_is_an_option_of_ci_tool_run() -> None:
    from ci_tool.bot.flags import FLAGS

    assert sorted({flag.name for flag in FLAGS} & OWN) == []


def test_the_run_command_knows_its_options() -> None:
    assert {"--base", "--results-dir", "--system-info", "--help"} <= {
        opt for param in run.get_params(click.Context(run)) for opt in param.opts
    }


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--run-mode", "nightly_release"], ["+ CPU-PackageSanityCheck-PY311"]),
        (["--post-merge", "--run-mode", "release_check"], ["+ CPU-Build_Docs", "+ CPU-PackageSanityCheck-PY311"]),
        (["--only-perf-sanity-test"],
         ["+ CPU-Generic-PerfSanity-1", "+ DGX_H100-PyTorch-PerfSanity-1", "+ DGX_B200-PyTorch-PerfSanity-1",
          "+ DGX_H200-PyTorch-PerfSanity-1"]),
    ],
    ids=["nightly", "release-check", "only-perf-sanity"],
)
def test_a_local_run_plans_run_modes_and_the_perf_sanity_flag(
    argv: list[str], expected: list[str], capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    """The local engine: this repository's catalog, planned (`--plan-only`) as `ci-tool run` would run it."""
    from ci_tool.cli import main

    assert main(["run", *argv, "--plan-only", "--history", f"{tmp_path}/h.sqlite"]) == 0
    planned = [line for line in capsys.readouterr().out.splitlines() if line.startswith("+ ")]
    assert planned == expected
