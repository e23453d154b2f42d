"""The `/bot` grammar: tables of (comment, parsed) and (comment, column, message), with exact messages."""

from __future__ import annotations

import pytest

from ci_tool.bot.grammar import is_bot_comment, parse_comment
from ci_tool.bot.parsed_comment import BotRequest, BotSyntaxError

# The comments quoted in the reference notes §5.5, as written (the notes' "…" elisions filled in with real
# names), and what their authors meant.
REAL_COMMENTS = [
    ("/bot run", {}),
    ("/bot run --disable-fail-fast", {"disable_fail_fast": True}),
    ("/bot run --post-merge --disable-fail-fast", {"disable_fail_fast": True, "post_merge": True}),
    (
        '/bot run --stage-list "DGX_H100-PyTorch-1, A30-AutoDeploy-1, DGX_H100-4_GPUs-PyTorch-1"',
        {"stage_list": ["DGX_H100-PyTorch-1", "A30-AutoDeploy-1", "DGX_H100-4_GPUs-PyTorch-1"]},
    ),
    ('/bot run --stage-list "DGX_H100*"', {"stage_list": ["DGX_H100*"]}),
    (
        '/bot run --stage-list "A10-PyTorch-*, A10-FMHA-Post-Merge-*, A30-PyTorch-*"',
        {"stage_list": ["A10-PyTorch-*", "A10-FMHA-Post-Merge-*", "A30-PyTorch-*"]},
    ),
    ('/bot run --post-merge --stage-list "A30-AutoDeploy-1"', {"stage_list": ["A30-AutoDeploy-1"], "post_merge": True}),
    (
        '/bot run  --disable-fail-fast --stage-list "\\*GB300\\*PerfSanity\\*"',
        {"disable_fail_fast": True, "stage_list": ["*GB300*PerfSanity*"]},
    ),
    (
        '/bot run --disable-fail-fast --stage-list "GB200-4_GPUs-PyTorch-PerfSanity-1,'
        'GB200-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-FUNCTIONAL-ONLY-CTX1-NODE1-GPU4-GEN1-NODE2-GPU8-1"',
        {
            "disable_fail_fast": True,
            "stage_list": [
                "GB200-4_GPUs-PyTorch-PerfSanity-1",
                "GB200-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-FUNCTIONAL-ONLY-CTX1-NODE1-GPU4-GEN1-NODE2-GPU8-1",
            ],
        },
    ),
    (
        '/bot run --disable-fail-fast --extra-stage "DGX\\_B200-8\\_GPUs-PyTorch-1, '
        'DGX\\_B200-8\\_GPUs-PyTorch-PerfSanity-Post-Merge-4"',
        {
            "disable_fail_fast": True,
            "extra_stage": ["DGX_B200-8_GPUs-PyTorch-1", "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-4"],
        },
    ),
    (
        '/bot run --stage-list "DGX_B200-4_GPUs-Verl-Post-Merge-1" to start the ci',
        {"stage_list": ["DGX_B200-4_GPUs-Verl-Post-Merge-1"]},
    ),
    ("/bot run --skip-test", {"skip_test": True}),
    ("/bot reuse-pipeline", {}),
    ('/bot skip --comment "waive only"', {"comment": "waive only"}),
    ('/bot skip --comment "Tests passed already"', {"comment": "Tests passed already"}),
    ("/bot run --only-multi-gpu-test", {"only_multi_gpu_test": True}),
    ("/bot run --add-multi-gpu-test", {"add_multi_gpu_test": True}),
    (
        '/bot run --disable-reuse-test --detailed-log --stage-list "A10-PyTorch-1"',
        {"disable_reuse_test": True, "stage_list": ["A10-PyTorch-1"], "detailed_log": True},
    ),
]


REAL_COMMENTS += [
    ('/bot run --stage-list ""', {}),  # the reference takes it as left out (the selection notes it, from the comment)
    ("/bot run --only-multi-gpu-test", {"only_multi_gpu_test": True}),
    ("/bot run --multi-gpu-test", {"only_multi_gpu_test": True}),  # the old spelling, still typed
    ("/bot run --only-perf-sanity-test --post-merge", {"only_perf_sanity_test": True, "post_merge": True}),
]


@pytest.mark.parametrize(("comment", "flags"), REAL_COMMENTS, ids=[c for c, _ in REAL_COMMENTS])
def test_real_comments_parse_as_intended(comment: str, flags: dict[str, object]) -> None:
    command = comment.split()[1]
    assert parse_comment(comment).to_json() == {"command": command, "flags": flags}


# Real comments that were mistakes: now each gets an error that says how to fix it.
REAL_MISTAKES = [
    (
        "/bot run --post-merge -disable-fail-fast",
        23,
        "unknown flag '-disable-fail-fast' Hint: did you mean '--disable-fail-fast'?",
    ),
    (
        "/bot skip",
        6,
        '/bot skip needs --comment "reason", found no --comment '
        'Hint: write /bot skip --comment "why testing is not needed"',
    ),
]


@pytest.mark.parametrize(("comment", "column", "message"), REAL_MISTAKES, ids=[c for c, _, _ in REAL_MISTAKES])
def test_real_mistakes_get_a_precise_error(comment: str, column: int, message: str) -> None:
    with pytest.raises(BotSyntaxError) as caught:
        parse_comment(comment)
    assert (caught.value.col, caught.value.headline) == (column, message)


PARSES = [
    ("/bot run --reuse-test", "run", {"reuse_test": True}),
    ("/bot run --reuse-test 4711 --high-priority", "run", {"reuse_test": "4711", "high_priority": True}),
    ('/bot run --reuse-test "4711"', "run", {"reuse_test": "4711"}),
    ('/bot run --gpu-type " A30 ,H100_PCIe,, "', "run", {"gpu_type": ["A30", "H100_PCIe"]}),
    ('/bot run --test-backend "PyTorch, cpp"', "run", {"test_backend": ["pytorch", "cpp"]}),
    ('/bot run --debug --stage-list "A10-PyTorch-1"', "run", {"stage_list": ["A10-PyTorch-1"], "debug": True}),
    (
        '/bot run --skip-test --extra-stage "CPU-Build_Docs"',
        "run",
        {"skip_test": True, "extra_stage": ["CPU-Build_Docs"]},
    ),
    ("/bot run --disable-multi-gpu-test --post-merge", "run", {"disable_multi_gpu_test": True, "post_merge": True}),
    ("/bot run\t--post-merge\u00a0--detailed-log", "run", {"post_merge": True, "detailed_log": True}),
    ("/bot run --post-merge\r\nand a second line with --junk", "run", {"post_merge": True}),
    ('/bot skip --comment "say \\"hi\\" | ok"', "skip", {"comment": 'say "hi" | ok'}),
    ('/bot skip --comment "a "nested" b"', "skip", {"comment": 'a "nested" b'}),
    ('/bot skip --comment "say "hi"" as asked', "skip", {"comment": 'say "hi"'}),
    ("/bot run --reuse-test to save time", "run", {"reuse_test": True}),
    ("/bot run --reuse-test --post-merge", "run", {"reuse_test": True, "post_merge": True}),
    ("/bot run --post-merge for alice@example.com", "run", {"post_merge": True}),
    ("/bot\u00a0run\u2009--post-merge", "run", {"post_merge": True}),
    ("/bot kill", "kill", {}),
    ("/bot kill because it hangs", "kill", {}),
    ("/bot", "help", {}),
    ("/bot help", "help", {}),
    ("/bot -h", "help", {}),
    ("/bot --help", "help", {}),
    ("/bot run --help", "help", {}),
    ("/bot h", "help", {}),
    ("/bot rerun --post-merge", "help", {}),
    ('/bot "run"', "help", {}),
    ("/botrun", "ignore", {}),
    (" /bot run", "ignore", {}),
    ("LGTM /bot run", "ignore", {}),
    ("", "ignore", {}),
    ("thanks!\n/bot run", "ignore", {}),
]


@pytest.mark.parametrize(("comment", "command", "flags"), PARSES, ids=[repr(c) for c, _, _ in PARSES])
def test_comment_parses(comment: str, command: str, flags: dict[str, object]) -> None:
    assert parse_comment(comment).to_json() == {"command": command, "flags": flags}


ERRORS = [
    (
        "/bot run --fast",
        10,
        "unknown flag '--fast' Hint: /bot run takes --reuse-test, --disable-reuse-test, "
        "--disable-fail-fast, --skip-test, --stage-list, --extra-stage, --gpu-type, --test-backend, "
        "--add-multi-gpu-test, --only-multi-gpu-test, --disable-multi-gpu-test, --only-perf-sanity-test, "
        "--post-merge, --detailed-log, "
        "--debug, --high-priority, --disable-cbts",
    ),
    ('/bot run --stagelist "A"', 10, "unknown flag '--stagelist' Hint: did you mean '--stage-list'?"),
    ("/bot run \u2014post-merge", 10, "unknown flag '\u2014post-merge' Hint: did you mean '--post-merge'?"),
    ("/bot run post-merge", 10, "unknown flag 'post-merge' Hint: did you mean '--post-merge'?"),
    ("/bot run debug", 10, "unknown flag 'debug' Hint: did you mean '--debug'?"),
    ('/bot run --comment "x"', 10, "--comment is a flag of /bot skip, not of /bot run"),
    ("/bot skip --post-merge", 11, "--post-merge is a flag of /bot run, not of /bot skip"),
    ("/bot kill --now", 11, "/bot kill takes no flags, found '--now'"),
    (
        "/bot run please --post-merge",
        10,
        "expected a flag, found 'please' "
        "Hint: put remarks after the last flag (found '--post-merge' later on the line)",
    ),
    ('/bot run "A10-PyTorch-1"', 10, "expected a flag, found the value '\"A10-PyTorch-1\"'"),
    (
        '/bot run --stage-list "A" "B"',
        27,
        "expected a flag, found the value '\"B\"' Hint: put all items of --stage-list in one quoted string",
    ),
    (
        '/bot run --stage-list "A10-PyTorch-1',
        23,
        'unterminated quote: expected a closing \'"\' on the same line Hint: end the value with a double quote: "A,B"',
    ),
    (
        '/bot run --stage-list "A\\"',
        23,
        'unterminated quote: expected a closing \'"\' on the same line Hint: end the value with a double quote: "A,B"',
    ),
    (
        "/bot run --stage-list A10-PyTorch-1",
        23,
        "expected a double-quoted list after --stage-list, found "
        "'A10-PyTorch-1' Hint: write --stage-list \"A10-PyTorch-1\"",
    ),
    (
        "/bot run --stage-list 'A10-PyTorch-1'",
        23,
        "expected a double-quoted list after --stage-list, found "
        '"\'A10-PyTorch-1\'" Hint: use straight double quotes: --stage-list "A,B"',
    ),
    (
        "/bot run --stage-list \u201cA\u201d",
        23,
        "expected a double-quoted list after --stage-list, found "
        "'\u201cA\u201d' Hint: use straight double quotes: --stage-list \"A,B\"",
    ),
    (
        "/bot run --stage-list",
        22,
        'expected a double-quoted list after --stage-list, found the end of the line Hint: write --stage-list "A,B"',
    ),
    (
        "/bot run --stage-list --post-merge",
        23,
        "expected a double-quoted list after --stage-list, found '--post-merge' Hint: write --stage-list \"A,B\"",
    ),
    (
        '/bot run --gpu-type " , "',
        21,
        "expected at least one item in --gpu-type, found '\" , \"' Hint: name at least one, or leave --gpu-type out",
    ),
    ('/bot run --stage-list="A"', 22, "expected a blank after --stage-list, found '=' Hint: write --stage-list \"…\""),
    ("/bot run --post-merge=true", 22, "--post-merge takes no value, found '=true' Hint: write --post-merge alone"),
    ('/bot run --post-merge "yes"', 23, "--post-merge takes no value, found '\"yes\"' Hint: write --post-merge alone"),
    (
        '/bot run --reuse-test "latest"',
        23,
        "expected a pipeline id (digits) or a run id after --reuse-test, found '\"latest\"' "
        "Hint: write --reuse-test 1234, --reuse-test 20261130-054838-3f2a (a run `ci-tool history` lists), "
        "or --reuse-test alone",
    ),
    (
        "/bot run --reuse-test 123abc",
        23,
        "expected a pipeline id (digits) or a run id after --reuse-test, found '123abc' "
        "Hint: write --reuse-test 1234, --reuse-test 20261130-054838-3f2a (a run `ci-tool history` lists), "
        "or --reuse-test alone",
    ),
    (
        "/bot run --reuse-test abc",
        23,
        "expected a pipeline id (digits) or a run id after --reuse-test, found 'abc' "
        "Hint: write --reuse-test 1234, --reuse-test 20261130-054838-3f2a (a run `ci-tool history` lists), "
        "or --reuse-test alone",
    ),
    (
        "/bot run @everyone",
        10,
        "expected a flag or a remark, found the mention '@everyone' "
        "Hint: the bot notifies no one: mention people in a comment of their own",
    ),
    (
        "/bot run --post-merge to check, cc @org/ci-team",
        36,
        "expected a flag or a remark, found the mention '@org/ci-team' "
        "Hint: the bot notifies no one: mention people in a comment of their own",
    ),
    (
        "/bot run --reuse-test #4711",
        23,
        "expected a pipeline id (digits) or a run id after --reuse-test, found '#4711' "
        "Hint: write --reuse-test 1234, --reuse-test 20261130-054838-3f2a (a run `ci-tool history` lists), "
        "or --reuse-test alone",
    ),
    (
        "/bot run --reuse-test \u0661\u0662",
        23,
        "expected a pipeline id (digits) or a run id after --reuse-test, found '\u0661\u0662' "
        "Hint: write --reuse-test 1234, --reuse-test 20261130-054838-3f2a (a run `ci-tool history` lists), "
        "or --reuse-test alone",
    ),
    (
        '/bot run --stage-list "A10-PyTorch-1","A10-PyTorch-2"',
        38,
        "expected a blank after the closing quote, found ',' "
        'Hint: a value is one double-quoted string ("A,B"); write \\" for a quote inside it',
    ),
    (
        '/bot skip --comment "why"not',
        26,
        "expected a blank after the closing quote, found 'n' "
        'Hint: a value is one double-quoted string ("A,B"); write \\" for a quote inside it',
    ),
    (
        '/bot skip --comment "why\\"',
        21,
        'unterminated quote: expected a closing \'"\' on the same line Hint: end the value with a double quote: "A,B"',
    ),
    ('/bot skip --comment "  "', 21, 'expected text in --comment, found \'"  "\' Hint: write --comment "reason"'),
    ("/bot run --post-merge --post-merge", 23, "--post-merge given twice (first at column 10) Hint: drop one of them"),
    (
        '/bot run --gpu-type "A30" --gpu-type "A10"',
        27,
        "--gpu-type given twice (first at column 10) Hint: merge the values into one list",
    ),
    (
        '/bot run --stage-list "DGX H100-PyTorch-1"',
        27,
        "unexpected blank inside --stage-list item 'DGX H100-PyTorch-1' Hint: separate items with ','",
    ),
    (
        '/bot run --gpu-type "DGX_*"',
        26,
        "unexpected '*' in --gpu-type item 'DGX_*' "
        "Hint: --gpu-type takes exact names; only --stage-list and --extra-stage take globs",
    ),
    (
        '/bot run --stage-list "A10-PyTorch-?"',
        36,
        "unexpected '?' in --stage-list item 'A10-PyTorch-?' Hint: items hold only letters, digits and - _ + [ ] *",
    ),
    (
        '/bot run --test-backend "pytorch, tensorrt"',
        35,
        "unknown value 'tensorrt' for --test-backend, expected one of pytorch, cpp, triton, fmha",
    ),
    (
        '/bot run --test-backend "pytroch"',
        26,
        "unknown value 'pytroch' for --test-backend, expected one of pytorch, cpp, triton, fmha "
        "Hint: did you mean 'pytorch'?",
    ),
    (
        "/bot run --disable-reuse-test --reuse-test",
        31,
        "--reuse-test conflicts with --disable-reuse-test (column 10): "
        "reuse is either on or off Hint: drop one of them",
    ),
    (
        "/bot run --add-multi-gpu-test --only-multi-gpu-test",
        31,
        "--only-multi-gpu-test conflicts with --add-multi-gpu-test (column 10): "
        "--only-multi-gpu-test already runs every multi-GPU stage Hint: drop one of them",
    ),
    (
        "/bot run --skip-test --post-merge",
        22,
        "--post-merge conflicts with --skip-test (column 10): "
        "--skip-test runs no test stages, so --post-merge would be ignored Hint: drop one of them",
    ),
    (
        "/bot run --debug",
        10,
        "--debug needs exactly one stage in --stage-list, found no --stage-list "
        'Hint: write --debug --stage-list "STAGE-NAME-1"',
    ),
    (
        '/bot run --debug --stage-list "A10-PyTorch-1, A10-PyTorch-2"',
        10,
        "--debug needs exactly one stage in "
        '--stage-list, found 2: A10-PyTorch-1, A10-PyTorch-2 Hint: write --debug --stage-list "STAGE-NAME-1"',
    ),
    (
        '/bot run --stage-list "A10-*" --debug',
        31,
        "--debug needs one exact stage name in --stage-list, found the glob "
        "'A10-*' Hint: write --debug --stage-list \"STAGE-NAME-1\"",
    ),
    (
        "/bot skip because flaky",
        6,
        '/bot skip needs --comment "reason", found no --comment '
        'Hint: write /bot skip --comment "why testing is not needed"',
    ),
]


# Invisible characters (see the grammar's docstring): each names its code point at its column.
INVISIBLE = [
    ("/bot run\u200b --disable-fail-fast", 9, "U+200B ZERO WIDTH SPACE"),
    ("\ufeff/bot run", 1, "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    ("/bot\u200b run", 5, "U+200B ZERO WIDTH SPACE"),
    ("/bot\u2060run", 5, "U+2060 WORD JOINER"),
    ('/bot run --stage-list "A10-\u200dPyTorch-1"', 28, "U+200D ZERO WIDTH JOINER"),
    ('/bot skip --comment "fine\u202e"', 26, "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("/bot run --post-merge to check\u00ad", 31, "U+00AD SOFT HYPHEN"),
    ("/bot run \x1b[31m--post-merge", 10, "U+001B"),
]


@pytest.mark.parametrize(("comment", "column", "name"), INVISIBLE, ids=[repr(c) for c, _, _ in INVISIBLE])
def test_an_invisible_character_is_an_error_naming_it(comment: str, column: int, name: str) -> None:
    with pytest.raises(BotSyntaxError) as caught:
        parse_comment(comment)
    assert (caught.value.col, caught.value.headline) == (
        column,
        f"expected a visible character or a blank, found the invisible {name} "
        "Hint: delete it: retype the text around the caret",
    )


def test_the_caret_points_at_the_invisible_character_as_written() -> None:
    with pytest.raises(BotSyntaxError) as caught:
        parse_comment("/bot run\u200b --disable-fail-fast")
    assert caught.value.caret() == "/bot run  --disable-fail-fast\n        ^"


@pytest.mark.parametrize(("comment", "column", "message"), ERRORS, ids=[c for c, _, _ in ERRORS])
def test_syntax_error_names_column_and_message(comment: str, column: int, message: str) -> None:
    with pytest.raises(BotSyntaxError) as caught:
        parse_comment(comment)
    assert (caught.value.col, caught.value.headline) == (column, message)


def test_error_echoes_the_comment_with_a_caret_under_the_column() -> None:
    with pytest.raises(BotSyntaxError) as caught:
        parse_comment("/bot run --post-merge -disable-fail-fast\nmore text")
    assert str(caught.value) == (
        "/bot comment, column 23: unknown flag '-disable-fail-fast' Hint: did you mean '--disable-fail-fast'?\n"
        "  /bot run --post-merge -disable-fail-fast\n"
        "                        ^"
    )


def test_a_long_comment_echoes_a_window_around_the_column() -> None:
    comment = '/bot run --stage-list "' + ", ".join(f"A10-PyTorch-{k}" for k in range(1, 30)) + ', A10 PyTorch-30"'
    with pytest.raises(BotSyntaxError) as caught:
        parse_comment(comment)
    line, caret = caught.value.caret().splitlines()
    assert line.startswith("…") and len(line) <= 102
    assert line[caret.index("^")] == " " and line[caret.index("^") - 3 : caret.index("^")] == "A10"


def test_tabs_in_the_echo_keep_the_caret_aligned() -> None:
    with pytest.raises(BotSyntaxError) as caught:
        parse_comment("/bot run\t--nope")
    assert caught.value.caret() == "/bot run --nope\n         ^"


def test_markdown_escapes_are_removed_and_columns_point_at_the_original_text() -> None:
    request = parse_comment('/bot run --stage-list "DGX\\_B200-PyTorch-1, \\*PerfSanity\\*"')
    assert request.items("stage_list") == ("DGX_B200-PyTorch-1", "*PerfSanity*")
    assert [request.column("stage_list"), request.column("stage_list", 0), request.column("stage_list", 1)] == [
        10,
        24,
        45,
    ]


def test_a_later_check_can_point_at_a_list_item() -> None:
    request = parse_comment('/bot run --stage-list "A10-PyTorch-1, A10-PyTroch-2"').selection_request()
    error = request.error("stage_list", 1, "unknown stage 'A10-PyTroch-2'", "did you mean 'A10-PyTorch-2'?")
    assert str(error).splitlines()[1:] == [
        '  /bot run --stage-list "A10-PyTorch-1, A10-PyTroch-2"',
        "                                        ^",
    ]


def test_the_request_is_a_frozen_value_in_table_order() -> None:
    request = parse_comment('/bot run --high-priority --stage-list "A" to see')
    assert request == BotRequest(
        "run",
        (("stage_list", ("A",)), ("high_priority", True)),
        '/bot run --high-priority --stage-list "A" to see',
        prose="to see",
    )
    assert (request.has("high_priority"), request.has("post_merge"), request.items("post_merge")) == (True, False, ())


@pytest.mark.parametrize(
    ("comment", "custom"),
    [
        ("/bot run", False),
        ("/bot run --post-merge --disable-fail-fast --add-multi-gpu-test", False),
        ('/bot run --extra-stage "A10-PyTorch-1"', False),
        ('/bot run --stage-list "A10-PyTorch-1"', True),
        ('/bot run --gpu-type "A10"', True),
        ("/bot run --skip-test", True),
        ("/bot run --disable-multi-gpu-test", True),
    ],
)
def test_selection_flags_make_a_custom_run(comment: str, custom: bool) -> None:
    assert parse_comment(comment).is_custom_run is custom


def test_unknown_sub_command_is_help_naming_the_word() -> None:
    assert parse_comment("/bot rnu --post-merge").unknown_command == "rnu"


@pytest.mark.parametrize(
    ("comment", "answer"),
    [
        ("/bot", True),
        ("/bot run", True),
        ("/bot\tkill", True),
        ("/bots", False),
        ("/Bot run", False),
        ("x\n/bot run", False),
        ("\ufeff/bot run", True),
        ("/bot\u200b run", True),
        ("\u200bthanks", False),
        ("\u200b/bots", False),
    ],
)
def test_only_the_word_bot_at_the_start_is_a_bot_comment(comment: str, answer: bool) -> None:
    assert is_bot_comment(comment) is answer


def test_stage_list_with_a_flag_it_makes_moot_parses_as_the_reference_runs_it() -> None:
    comment = '/bot run --stage-list "GB200-4_GPUs-PyTorch-1" --add-multi-gpu-test --disable-fail-fast'
    assert parse_comment(comment).to_json() == {
        "command": "run",
        "flags": {"disable_fail_fast": True, "stage_list": ["GB200-4_GPUs-PyTorch-1"], "add_multi_gpu_test": True},
    }


def test_the_old_spelling_counts_as_its_flag_when_both_are_given() -> None:
    with pytest.raises(BotSyntaxError) as caught:
        parse_comment("/bot run --multi-gpu-test --only-multi-gpu-test")
    assert (caught.value.col, caught.value.headline) == (
        27, "--only-multi-gpu-test given twice (first at column 10) Hint: drop one of them"
    )  # fmt: skip
