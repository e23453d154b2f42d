"""The flag table is the one registry: consistent rows, every flag of the issue, facts shared with the names grammar."""

from __future__ import annotations

import pytest

from ci_tool.bot.flags import (
    COMMANDS,
    CONFLICTS,
    FLAGS,
    JENKINS_COMMANDS,
    PLANNED_COMMANDS,
    PR_COMMANDS,
    Arg,
    Flag,
    SubCommand,
    command,
    flag_by_key,
    flag_by_name,
    flags_of,
)
from ci_tool.stages.names import BACKENDS
from ci_tool.stages.selection_request import OPTIONS, OptionKind

RUN_FLAGS = [
    "--reuse-test",
    "--disable-reuse-test",
    "--disable-fail-fast",
    "--skip-test",
    "--stage-list",
    "--extra-stage",
    "--gpu-type",
    "--test-backend",
    "--add-multi-gpu-test",
    "--only-multi-gpu-test",
    "--disable-multi-gpu-test",
    "--only-perf-sanity-test",  # in the reference's help at one commit (bot-command.yml)
    "--post-merge",
    "--detailed-log",
    "--debug",
    "--high-priority",
    "--disable-cbts",  # the reference's CBTS kill switch (documented in its CBTS README)
]


def test_run_has_exactly_the_reference_flags_in_order() -> None:
    assert [flag.name for flag in flags_of(SubCommand.RUN)] == RUN_FLAGS


def test_sub_commands() -> None:
    assert [c.name for c in COMMANDS] == ["run", "kill", "skip", "reuse-pipeline", "help"]


def test_names_and_keys_are_unique_and_snake_case() -> None:
    assert len({f.name for f in FLAGS}) == len({f.key for f in FLAGS}) == len(FLAGS)
    assert flag_by_key("stage_list").name == "--stage-list"
    assert flag_by_name("--nope") is None and command("nope") is None


@pytest.mark.parametrize("flag", FLAGS, ids=[f.name for f in FLAGS])
def test_each_row_is_consistent(flag: Flag) -> None:
    assert flag.name.startswith("--") and command(flag.command) is not None
    assert "|" not in flag.help and "\n" not in flag.help
    assert not flag.globs or flag.arg is Arg.LIST
    assert not flag.choices or flag.arg is Arg.LIST


def test_conflicts_name_flags_of_the_table_once() -> None:
    pairs = [frozenset((c.first, c.second)) for c in CONFLICTS]
    assert len(set(pairs)) == len(pairs)
    assert all(flag_by_name(name) is not None for pair in pairs for name in pair)


def test_test_backend_choices_are_backends_of_the_stage_name_grammar() -> None:
    choices = flag_by_key("test_backend").choices
    assert set(choices) <= set(BACKENDS.values())


def test_the_run_flags_are_exactly_the_selection_requests_options() -> None:
    """The bot spells the options; what each means is the option table's, with nothing listed twice."""
    assert [(flag.key, flag.option) for flag in flags_of(SubCommand.RUN)] == [(o.key, o) for o in OPTIONS]
    assert [flag.option for flag in FLAGS if flag.command is not SubCommand.RUN] == [None]


@pytest.mark.parametrize(
    ("kind", "arg"),
    [(OptionKind.SWITCH, Arg.SWITCH), (OptionKind.LIST, Arg.LIST), (OptionKind.PIPELINE_ID, Arg.OPTIONAL_ID)],
)
def test_a_run_flag_takes_what_its_option_holds(kind: OptionKind, arg: Arg) -> None:
    run_flags = flags_of(SubCommand.RUN)
    assert {flag.arg for flag in run_flags if flag.option is not None and flag.option.kind is kind} == {arg}


@pytest.mark.parametrize(
    ("name", "reads_pull_request", "reaches_jenkins", "plans_stages"),
    [
        ("run", True, True, True),
        ("kill", False, True, False),
        ("skip", True, False, False),
        ("reuse-pipeline", True, True, True),
        ("help", False, False, False),
    ],
    ids=["run", "kill", "skip", "reuse-pipeline", "help"],
)
def test_what_bot_handle_reads_and_reaches_for_each_command(
    name: str, reads_pull_request: bool, reaches_jenkins: bool, plans_stages: bool
) -> None:
    facts = (name in PR_COMMANDS, name in JENKINS_COMMANDS, name in PLANNED_COMMANDS)
    assert facts == (reads_pull_request, reaches_jenkins, plans_stages)


def test_the_old_multi_gpu_spelling_is_an_alias_of_the_current_flag() -> None:
    assert {flag.name: flag.aliases for flag in flags_of(SubCommand.RUN) if flag.aliases} == {
        "--only-multi-gpu-test": ("--multi-gpu-test",)
    }
