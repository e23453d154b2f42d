"""The selection request: the option table's facts, CI's JSON payload read back, and the rules that live
on the request (custom run, fail-fast, stage-run options)."""

from __future__ import annotations

import dataclasses

import pytest

from ci_tool.bot.grammar import parse_comment
from ci_tool.errors import StageError
from ci_tool.stages.selection_request import OPTIONS, SelectionRequest, flag_name, option, request_from_json


def test_every_option_is_a_request_field_and_every_field_an_option() -> None:
    # the source (where a comment wrote it) and the run mode (set by the job, never a flag) are no options
    fields = [f.name for f in dataclasses.fields(SelectionRequest) if f.name not in ("source", "run_mode")]
    assert fields == [found.key for found in OPTIONS]


@pytest.mark.parametrize(("key", "flag"), [("stage_list", "--stage-list"), ("post_merge", "--post-merge")])
def test_an_options_flag_is_its_key_with_dashes(key: str, flag: str) -> None:
    assert option(key).name == flag_name(key) == flag


@pytest.mark.parametrize(
    ("data", "request_"),
    [
        ({"command": "run"}, SelectionRequest()),
        (
            {"command": "run", "flags": {"stage_list": ["A", "B*"], "post_merge": True, "reuse_test": "12"}},
            SelectionRequest(reuse_test="12", stage_list=("A", "B*"), post_merge=True),
        ),
        ({"command": "run", "flags": {"reuse_test": True}}, SelectionRequest(reuse_test=True)),
    ],
    ids=["no flags", "lists, switches and ids", "reuse the latest"],
)
def test_request_from_json_round_trips(data: dict[str, object], request_: SelectionRequest) -> None:
    parsed = request_from_json(data)
    assert parsed == request_
    assert request_from_json(parsed.to_json()) == parsed


PIPELINE_ID = "true, a pipeline id (digits) or a run id (20261130-054838-3f2a)"


def _run(**flags: object) -> dict[str, object]:
    return {"command": "run", "flags": flags}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("run", "req: expected an object with command, flags, run_mode, found 'run'"),
        ({"flags": {}}, 'req: expected an object with command too (RequestJson), found ["flags"]'),
        ({"command": "kill"}, "req (command): expected a /bot run request to select stages, found /bot kill"),
        ({"command": "run", "flag": {}}, "req: expected only the keys of RequestJson, found 'flag'"),
        ({"command": "run", "flags": []}, "req (flags): expected an object, found []"),
        (_run(comment="x"), "req (flags.comment): expected a flag of /bot run, found 'comment'"),
        (_run(stage_list="A"), "req (flags.stage_list): expected a list of strings, found 'A'"),
        (_run(reuse_test="abc"), f"req (flags.reuse_test): expected {PIPELINE_ID}, found 'abc'"),
        (_run(reuse_test="\u00b2"), f"req (flags.reuse_test): expected {PIPELINE_ID}, found '²'"),
        (_run(post_merge=False), "req (flags.post_merge): expected true, found False"),
    ],
    ids=["not an object", "no command", "not run", "a key misspelt", "flags not an object", "flag of another command",
         "list", "id", "non-ASCII digit", "false switch"],
)  # fmt: skip
def test_request_from_json_rejects(data: object, message: str) -> None:
    with pytest.raises(StageError) as caught:
        request_from_json(data, source="req")
    assert f"{caught.value.where}: {caught.value.message}" == message


@pytest.mark.parametrize(
    ("comment", "custom", "fail_fast", "stage_run_args"),
    [
        ("/bot run", False, True, ()),
        ("/bot run --disable-fail-fast", False, False, ()),
        ("/bot run --post-merge", False, False, ("--record-touches",)),  # CI records touches post-merge
        ('/bot run --stage-list "A10-PyTorch-1" --detailed-log', True, True, ("--detailed-log",)),
        ('/bot run --gpu-type "A10"', True, True, ()),
        ("/bot run --add-multi-gpu-test", False, True, ()),
    ],
)
def test_the_rules_that_live_on_the_request(
    comment: str, custom: bool, fail_fast: bool, stage_run_args: tuple[str, ...]
) -> None:
    request = parse_comment(comment).selection_request()
    assert (request.custom_run, request.fail_fast, request.stage_run_args) == (custom, fail_fast, stage_run_args)


def test_a_comment_becomes_the_request_json_ci_receives() -> None:
    request = parse_comment('/bot run --reuse-test 42 --stage-list "A, B" --post-merge').selection_request()
    assert request.to_json() == {
        "command": "run",
        "flags": {"reuse_test": "42", "stage_list": ["A", "B"], "post_merge": True},
    }


SCOPES = {
    "bare run": ("/bot run", "{}"),
    "run options do not count": ("/bot run --disable-fail-fast --detailed-log --reuse-test --high-priority", "{}"),
    "disable reuse does not count": ("/bot run --disable-reuse-test", "{}"),
    "selection options count": (
        '/bot run --post-merge --stage-list "A10-PyTorch-1"',
        '{"post_merge": true, "stage_list": ["A10-PyTorch-1"]}',
    ),
}


@pytest.mark.parametrize(("comment", "scope"), SCOPES.values(), ids=SCOPES.keys())
def test_the_scope_is_what_the_request_selects(comment: str, scope: str) -> None:
    assert parse_comment(comment).selection_request().scope == scope
