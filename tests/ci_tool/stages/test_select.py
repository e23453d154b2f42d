"""Stage selection (reference §4.8): one table per step on a small catalog, the order of the steps, the
reason recorded for each stage, name validation, approvals and the merge gate, and the real §5.5 comments."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ci_tool.bot.grammar import parse_comment
from ci_tool.errors import BotError, StageError
from ci_tool.stages.approvals import FULL_PRE_MERGE_APPROVED, POST_MERGE_APPROVED
from ci_tool.stages.catalog import Catalog
from ci_tool.stages.catalog_load import open_catalog
from ci_tool.stages.engines import Engine
from ci_tool.stages.select import RULES, Selection, option_steps, rule_for, select_stages
from ci_tool.stages.selection_request import RunMode, SelectionRequest, Step, request_from_json

CATALOGS = Path(__file__).parent / "catalogs"
CATALOG: Catalog = open_catalog(CATALOGS / "select.yml", CATALOGS / "test-db").catalog
ROOT = Path(__file__).resolve().parents[3]

DEFAULT = (
    "CPU-Generic-1",
    "A10-PyTorch-1",
    "A10-PyTorch-2",
    "A10-CPP-1",
    "A30-PyTorch-1",
    "A30-AutoDeploy-1",
    "A30-Triton-1",
    "DGX_H100-PyTorch-1",
    "GB300-PyTorch-PerfSanity-1",
)
PRE_MERGE_MULTI_GPU = ("DGX_H100-4_GPUs-PyTorch-1", "DGX_H100-4_GPUs-PyTorch-DeepSeek-1", "DGX_B200-8_GPUs-PyTorch-1")
POST_MERGE = (
    "A10-FMHA-Post-Merge-1",
    "DGX_H100-4_GPUs-PyTorch-Post-Merge-1",
    "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-1",
    "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-2",
    "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3",
    "DGX_B200-4_GPUs-Verl-Post-Merge-1",
)


APPROVED = (POST_MERGE_APPROVED,)  # every label: the step tables check what the steps select, not approvals


def select(
    comment: str,
    files: Sequence[str] = (),
    labels: Sequence[str] = APPROVED,
    passed: Sequence[str] = (),
    engine: Engine = Engine.JENKINS,
) -> Selection:
    request = parse_comment(comment).selection_request()
    reused = dict.fromkeys(passed, "1234")  # each passed in pipeline 1234
    return select_stages(CATALOG, request, engine=engine, changed_files=files, labels=labels, passed_stages=reused)


def in_catalog_order(*groups: Sequence[str]) -> tuple[str, ...]:
    wanted = {name for group in groups for name in group}
    return tuple(name for name in CATALOG.names if name in wanted)


def without(names: Sequence[str], *dropped: str) -> tuple[str, ...]:
    return tuple(name for name in names if name not in dropped)


# (comment, changed files, selected stages), one block per step
STEPS = {
    # 1: the default pre-merge set: no Post-Merge, no multi-GPU, no OnDemand
    "1 default": ("/bot run", (), DEFAULT),
    "1 run options select nothing": ("/bot run --disable-fail-fast --detailed-log", (), DEFAULT),
    # 2: a multi-GPU path adds the pre-merge multi-GPU stages, unless --disable-multi-gpu-test
    "2 multi-GPU path": ("/bot run", ("src/dist/group.py",), in_catalog_order(DEFAULT, PRE_MERGE_MULTI_GPU)),
    "2 other path": ("/bot run", ("src/distance.py",), DEFAULT),
    "2 forced off": ("/bot run --disable-multi-gpu-test", ("src/dist/group.py",), DEFAULT),
    # 3: a tag trigger adds every stage carrying the token (Post-Merge too, never OnDemand)
    "3 tag trigger": (
        "/bot run",
        ("src/models/deepseek.py",),
        in_catalog_order(DEFAULT, ["DGX_H100-4_GPUs-PyTorch-DeepSeek-1"]),
    ),
    "3 backend token": ("/bot run", ("triton_backend/server.py",), DEFAULT),  # A30-Triton-1 is already in
    # 4: --post-merge adds the multi-GPU and Post-Merge stages
    "4 post-merge": ("/bot run --post-merge", (), in_catalog_order(DEFAULT, PRE_MERGE_MULTI_GPU, POST_MERGE)),
    # 5: --skip-test keeps only non-test stages (this catalog has none)
    "5 skip-test": ("/bot run --skip-test", (), ()),
    # 6: --add-multi-gpu-test adds the pre-merge multi-GPU stages
    "6 add multi-GPU": ("/bot run --add-multi-gpu-test", (), in_catalog_order(DEFAULT, PRE_MERGE_MULTI_GPU)),
    # 7: --only-multi-gpu-test replaces the set (with the post-merge ones under --post-merge)
    "7 only multi-GPU": ("/bot run --only-multi-gpu-test", (), PRE_MERGE_MULTI_GPU),
    "7 only multi-GPU post-merge": (
        "/bot run --only-multi-gpu-test --post-merge",
        (),
        in_catalog_order(PRE_MERGE_MULTI_GPU, without(POST_MERGE, "A10-FMHA-Post-Merge-1")),
    ),
    # 8: --disable-multi-gpu-test removes them, also after --post-merge
    "8 disable multi-GPU": (
        "/bot run --post-merge --disable-multi-gpu-test",
        (),
        in_catalog_order(DEFAULT, ["A10-FMHA-Post-Merge-1"]),
    ),
    # 9: --gpu-type keeps exact GPU tokens
    "9 gpu-type": (
        '/bot run --gpu-type "A30, DGX_H100"',
        (),
        ("A30-PyTorch-1", "A30-AutoDeploy-1", "A30-Triton-1", "DGX_H100-PyTorch-1"),
    ),
    # 10: --test-backend keeps the listed backends and stages of no counted backend (Generic, AutoDeploy)
    "10 test-backend": (
        '/bot run --test-backend "cpp, triton"',
        (),
        ("CPU-Generic-1", "A10-CPP-1", "A30-AutoDeploy-1", "A30-Triton-1"),
    ),
    # 11: a change confined to one file group runs only its stages; off with --test-backend
    "11 docs only": ("/bot run", ("docs/guide.md", "README.md"), ("CPU-Generic-1",)),
    "11 docs and code": ("/bot run", ("docs/guide.md", "src/engine.py"), DEFAULT),
    "11 off with test-backend": (
        '/bot run --test-backend "cpp"',
        ("README.md",),
        ("CPU-Generic-1", "A10-CPP-1", "A30-AutoDeploy-1"),
    ),
    # 13: --stage-list replaces everything, from the full catalog (OnDemand, Post-Merge, multi-GPU)
    "13 stage-list": (
        '/bot run --stage-list "A10-PyTorch-OnDemand-1, A10-FMHA-Post-Merge-*"',
        (),
        ("A10-FMHA-Post-Merge-1", "A10-PyTorch-OnDemand-1"),
    ),
    "13 stage-list wins": ('/bot run --post-merge --stage-list "A30-AutoDeploy-1"', (), ("A30-AutoDeploy-1",)),
    "13 legacy spelling": ('/bot run --stage-list "A10-FMHA-[Post-Merge]-1"', (), ("A10-FMHA-Post-Merge-1",)),
    # 14: --extra-stage adds to the usual set
    "14 extra-stage": (
        '/bot run --extra-stage "A10-PyTorch-OnDemand-1, DGX_B200-4_GPUs-Verl-*"',
        (),
        in_catalog_order(DEFAULT, ["A10-PyTorch-OnDemand-1", "DGX_B200-4_GPUs-Verl-Post-Merge-1"]),
    ),
    "14 extra after gpu-type": (
        '/bot run --gpu-type "A30" --extra-stage "CPU-Generic-1"',
        (),
        ("CPU-Generic-1", "A30-PyTorch-1", "A30-AutoDeploy-1", "A30-Triton-1"),
    ),
}


@pytest.mark.parametrize(("comment", "files", "expected"), STEPS.values(), ids=STEPS.keys())
def test_each_step(comment: str, files: tuple[str, ...], expected: tuple[str, ...]) -> None:
    selection = select(comment, files)
    assert (selection.names, selection.errors) == (expected, ())


REUSE = {
    "reused stages are skipped": ("/bot run", DEFAULT[1:]),
    "--reuse-test with an id too": ("/bot run --reuse-test 1234", DEFAULT[1:]),
    "--disable-reuse-test runs them": ("/bot run --disable-reuse-test", DEFAULT),
}


@pytest.mark.parametrize(("comment", "expected"), REUSE.values(), ids=REUSE.keys())
def test_step_18_reuse(comment: str, expected: tuple[str, ...]) -> None:
    assert select(comment, passed=["CPU-Generic-1", "A10-PyTorch-OnDemand-1"]).names == expected


# (comment, files, stage) -> (selected, step, reason): the verdict records the last step that decided
VERDICTS = {
    "default in": ("/bot run", (), "A10-PyTorch-1", (True, 1, "pre-merge set")),
    "post-merge out": (
        "/bot run",
        (),
        "A10-FMHA-Post-Merge-1",
        (False, 1, "Post-Merge stage: not in the pre-merge set"),
    ),
    "multi-GPU out": (
        "/bot run",
        (),
        "DGX_H100-4_GPUs-PyTorch-1",
        (False, 1, "multi-GPU stage: not in the pre-merge set"),
    ),
    "on-demand out": (
        "/bot run",
        (),
        "A10-PyTorch-OnDemand-1",
        (False, 1, "OnDemand stage: runs only when named in --stage-list or --extra-stage"),
    ),
    "path": (
        "/bot run",
        ("src/dist/a.py",),
        "DGX_H100-4_GPUs-PyTorch-1",
        (True, 2, "src/dist/a.py changed (multi-GPU path 'src/dist/')"),
    ),
    "trigger": (
        "/bot run",
        ("src/models/deepseek.py",),
        "DGX_H100-4_GPUs-PyTorch-DeepSeek-1",
        (True, 3, "src/models/deepseek.py changed (adds DeepSeek stages)"),
    ),
    "post-merge flag": (
        "/bot run --post-merge",
        (),
        "A10-FMHA-Post-Merge-1",
        (True, 4, "--post-merge adds the multi-GPU and Post-Merge stages"),
    ),
    "skip-test": ("/bot run --skip-test", (), "CPU-Generic-1", (False, 5, "--skip-test runs no test stages")),
    "only multi-GPU": (
        "/bot run --only-multi-gpu-test",
        (),
        "CPU-Generic-1",
        (False, 7, "--only-multi-gpu-test runs only multi-GPU stages"),
    ),
    "disable multi-GPU": (
        "/bot run --add-multi-gpu-test --post-merge",
        (),
        "DGX_B200-8_GPUs-PyTorch-1",
        (True, 6, "--add-multi-gpu-test adds the multi-GPU stages"),
    ),
    "gpu-type": ('/bot run --gpu-type "A30"', (), "A10-PyTorch-1", (False, 9, "--gpu-type keeps GPU A30")),
    "test-backend": (
        '/bot run --test-backend "cpp"',
        (),
        "A10-PyTorch-1",
        (False, 10, "--test-backend keeps backend cpp and stages of no listed backend kind"),
    ),
    "docs only": ("/bot run", ("README.md",), "A10-PyTorch-1", (False, 11, "only docs files changed: runs CPU-*")),
    "stage-list glob": ('/bot run --stage-list "A10-*"', (), "A10-CPP-1", (True, 13, "--stage-list matches 'A10-*'")),
    "stage-list exact": ('/bot run --stage-list "A10-CPP-1"', (), "A10-CPP-1", (True, 13, "--stage-list names it")),
    "not in stage-list": ('/bot run --stage-list "A10-CPP-1"', (), "CPU-Generic-1", (False, 13, "not in --stage-list")),
    "extra": (
        '/bot run --extra-stage "A10-FMHA-*"',
        (),
        "A10-FMHA-Post-Merge-1",
        (True, 14, "--extra-stage matches 'A10-FMHA-*'"),
    ),
}


@pytest.mark.parametrize(("comment", "files", "stage", "verdict"), VERDICTS.values(), ids=VERDICTS.keys())
def test_each_verdict_names_its_step_and_reason(
    comment: str, files: tuple[str, ...], stage: str, verdict: tuple[bool, int, str]
) -> None:
    found = next(v for v in select(comment, files).verdicts if v.stage == stage)
    assert (found.selected, found.step, found.reason) == verdict


def test_reused_stages_are_listed_apart() -> None:
    selection = select("/bot run", passed=["CPU-Generic-1"])
    assert [(v.stage, v.step, v.reason) for v in selection.reused] == [
        ("CPU-Generic-1", 18, "reused from run 1234")
    ]


def test_every_stage_has_one_verdict_in_catalog_order() -> None:
    assert tuple(v.stage for v in select("/bot run --post-merge").verdicts) == CATALOG.names


def test_rules_run_in_step_order() -> None:
    steps = [rule.step for rule in RULES]
    assert steps == sorted(steps) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]


@pytest.mark.parametrize("step", option_steps(), ids=str)
def test_every_option_step_has_a_rule(step: Step) -> None:
    rule = rule_for(step)
    assert rule is not None and rule.step is step


# (comment, column, message): names the catalog lacks, pointing at the comment
ERRORS = {
    "typo": (
        '/bot run --stage-list "A10-Pytorch-1"',
        24,
        "--stage-list: expected a stage of the catalog, found 'A10-Pytorch-1' Hint: did you mean 'A10-PyTorch-1' "
        "or 'A30-PyTorch-1' or 'A10-PyTorch-2'?",
    ),
    "glob matching nothing": (
        '/bot run --extra-stage "A10-PyTorch-1, *GB200*"',
        40,
        "--extra-stage: expected the glob '*GB200*' to match a stage of the catalog, found none "
        "Hint: no stage name holds 'GB200'; did you mean 'GB300'?",
    ),
    "no close name": (
        '/bot run --stage-list "Z9-Verl-1"',
        24,
        "--stage-list: expected a stage of the catalog, found 'Z9-Verl-1' Hint: `ci-tool stages list` prints "
        "every stage",
    ),
    "gpu token": (
        '/bot run --gpu-type "H100"',
        22,
        "--gpu-type: expected a GPU token of the catalog (A10, A30, CPU, DGX_B200, DGX_H100, GB300), found 'H100' "
        "Hint: did you mean 'DGX_H100'?",
    ),
}


@pytest.mark.parametrize(("comment", "column", "message"), ERRORS.values(), ids=ERRORS.keys())
def test_unknown_names_are_errors_at_their_column(comment: str, column: int, message: str) -> None:
    (error,) = select(comment).errors
    assert (error.col, error.headline) == (column, message)  # type: ignore[attr-defined]


def test_errors_without_a_comment_are_plain_stage_errors() -> None:
    request = SelectionRequest(stage_list=("A10-Pytorch-1",))
    (error,) = select_stages(CATALOG, request, engine=Engine.LOCAL).errors
    assert isinstance(error, StageError)
    assert str(error).startswith("--stage-list: expected a stage of the catalog, found 'A10-Pytorch-1' Hint:")


def test_valid_items_still_select_when_another_is_unknown() -> None:
    selection = select('/bot run --stage-list "A10-CPP-1, A10-Pytorch-1"')
    assert (selection.names, len(selection.errors), selection.merge_gate) == (("A10-CPP-1",), 1, False)


def test_only_run_requests_select() -> None:
    with pytest.raises(BotError, match="expected a /bot run request to select stages, found /bot kill"):
        parse_comment("/bot kill").selection_request()


# (comment, labels, missing labels, custom run): approvals come from the selected stages
GATES = {
    "default": ("/bot run", (), (), False),
    "multi-GPU by name": (
        '/bot run --stage-list "DGX_H100-4_GPUs-PyTorch-1"',
        (),
        ("ci: full pre-merge approved",),
        True,
    ),
    "multi-GPU by path": ("/bot run", (), (), False),
    "labelled": ("/bot run --add-multi-gpu-test", ("ci: full pre-merge approved",), (), False),
    "full post-merge": ("/bot run --post-merge", (), ("ci: post-merge approved",), False),
    "post-merge label covers both": ("/bot run --post-merge", ("ci: post-merge approved",), (), False),
    "broad selector": ('/bot run --extra-stage "\\*PerfSanity\\*"', (), ("ci: post-merge approved",), False),
    "Post-Merge by name needs nothing": ('/bot run --stage-list "A10-FMHA-Post-Merge-1"', (), (), True),
    "gpu-type is custom": ('/bot run --gpu-type "A10"', (), (), True),
}


@pytest.mark.parametrize(("comment", "labels", "missing", "custom"), GATES.values(), ids=GATES.keys())
def test_approvals_and_merge_gate(
    comment: str, labels: tuple[str, ...], missing: tuple[str, ...], custom: bool
) -> None:
    selection = select(comment, labels=labels)
    assert (tuple(m.label for m in selection.missing), selection.custom_run, selection.merge_gate) == (
        missing,
        custom,
        not custom and not missing,  # a run with blocked stages cannot turn the gate green either
    )


def test_file_triggered_multi_gpu_stages_need_the_label() -> None:
    selection = select("/bot run", files=["src/dist/a.py"], labels=())
    assert [(m.label, m.reasons) for m in selection.missing] == [
        (
            "ci: full pre-merge approved",
            (
                "multi-GPU stages DGX_H100-4_GPUs-PyTorch-1, DGX_H100-4_GPUs-PyTorch-DeepSeek-1, "
                "DGX_B200-8_GPUs-PyTorch-1",
            ),
        )
    ]


# The reference's real comments (§5.5), against this catalog: (comment, selected, custom run)
REAL = {
    "#14985 plain": ("/bot run", DEFAULT, False),
    "#14985 fail-fast": ("/bot run --disable-fail-fast", DEFAULT, False),
    "#14985 post-merge": (
        "/bot run --post-merge --disable-fail-fast",
        in_catalog_order(DEFAULT, PRE_MERGE_MULTI_GPU, POST_MERGE),
        False,
    ),
    "#14985 names": (
        '/bot run --stage-list "DGX_H100-PyTorch-1, A30-AutoDeploy-1, DGX_H100-4_GPUs-PyTorch-1"',
        ("A30-AutoDeploy-1", "DGX_H100-PyTorch-1", "DGX_H100-4_GPUs-PyTorch-1"),
        True,
    ),
    "#14985 glob": (
        '/bot run --stage-list "DGX_H100*"',
        (
            "DGX_H100-PyTorch-1",
            "DGX_H100-4_GPUs-PyTorch-1",
            "DGX_H100-4_GPUs-PyTorch-DeepSeek-1",
            "DGX_H100-4_GPUs-PyTorch-Post-Merge-1",
        ),
        True,
    ),
    "#14985 globs": (
        '/bot run --stage-list "A10-PyTorch-*, A10-FMHA-Post-Merge-*, A30-PyTorch-*"',
        # a glob reaches the whole catalog: A10-PyTorch-* catches the OnDemand family too
        ("A10-PyTorch-1", "A10-PyTorch-2", "A10-FMHA-Post-Merge-1", "A10-PyTorch-OnDemand-1", "A30-PyTorch-1"),
        True,
    ),
    "#14985 post-merge names": ('/bot run --post-merge --stage-list "A30-AutoDeploy-1"', ("A30-AutoDeploy-1",), True),
    "#19074 escaped stars": (
        '/bot run  --disable-fail-fast --stage-list "\\*GB300\\*PerfSanity\\*"',
        ("GB300-PyTorch-PerfSanity-1",),
        True,
    ),
    "#14293 extra": (
        '/bot run --disable-fail-fast --extra-stage "DGX_B200-8_GPUs-PyTorch-1, '
        'DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3"',
        in_catalog_order(DEFAULT, ["DGX_B200-8_GPUs-PyTorch-1", "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3"]),
        False,
    ),
    "#11306 trailing prose": (
        '/bot run --stage-list "DGX_B200-4_GPUs-Verl-Post-Merge-1" to start the ci',
        ("DGX_B200-4_GPUs-Verl-Post-Merge-1",),
        True,
    ),
    "#14086 skip-test": ("/bot run --skip-test", (), True),
    "#3555 only multi-GPU": ("/bot run --only-multi-gpu-test", PRE_MERGE_MULTI_GPU, True),
    "docs add multi-GPU": ("/bot run --add-multi-gpu-test", in_catalog_order(DEFAULT, PRE_MERGE_MULTI_GPU), False),
    "repeat a flake": (
        '/bot run --disable-reuse-test --detailed-log --stage-list "A10-PyTorch-1"',
        ("A10-PyTorch-1",),
        True,
    ),
}


@pytest.mark.parametrize(("comment", "expected", "custom"), REAL.values(), ids=REAL.keys())
def test_real_comments(comment: str, expected: tuple[str, ...], custom: bool) -> None:
    selection = select(comment)
    assert (selection.names, selection.errors, selection.custom_run) == (expected, (), custom)


def test_blocked_stages_are_named_and_not_run_while_the_others_run() -> None:
    selection = select("/bot run --add-multi-gpu-test", labels=())
    assert [(b.stage.name.name, b.label) for b in selection.blocked] == [
        (name, FULL_PRE_MERGE_APPROVED) for name in PRE_MERGE_MULTI_GPU
    ]
    assert (selection.names, selection.merge_gate) == (DEFAULT, False)
    assert select("/bot run --add-multi-gpu-test", labels=(FULL_PRE_MERGE_APPROVED,)).blocked == ()


def test_flags_stage_list_makes_moot_run_with_a_note() -> None:
    selection = select('/bot run --stage-list "A10-CPP-1, DGX_H100-4_GPUs-PyTorch-1" --add-multi-gpu-test')
    assert (selection.names, selection.errors) == (("A10-CPP-1", "DGX_H100-4_GPUs-PyTorch-1"), ())
    assert selection.notes == ("--add-multi-gpu-test had no effect: --stage-list replaces the selection",)


ENGINE_REFUSALS = {
    "github debug": (
        Engine.GITHUB,
        '/bot run --stage-list "A10-CPP-1" --debug',
        35,
        "--debug: expected an option the github engine honours, found one it cannot: a GitHub Actions runner ends "
        "with its job: no stage can be kept to look at Hint: drop --debug",
    ),
    "jenkins reuse of a build": (
        Engine.JENKINS,
        "/bot run --reuse-test 12",
        10,
        "--reuse-test: expected an option the jenkins engine honours, found one it cannot: names one pipeline, and "
        "the stages of a generated pipeline are runs of their own in the shared history: reuse goes by the commit "
        "instead (a bare --reuse-test) Hint: drop --reuse-test",
    ),
}

@pytest.mark.parametrize(("engine", "comment", "column", "message"), ENGINE_REFUSALS.values(), ids=ENGINE_REFUSALS)
def test_an_option_the_engine_cannot_honour_is_refused_at_its_column(
    engine: Engine, comment: str, column: int, message: str
) -> None:
    selection = select(comment, engine=engine)
    (error,) = selection.refused
    assert (error.col, error.headline, selection.errors) == (column, message, (error,))  # type: ignore[attr-defined]


@pytest.mark.parametrize("engine", list(Engine), ids=str)
def test_every_engine_honours_detailed_log_and_fail_fast(engine: Engine) -> None:
    selection = select("/bot run --detailed-log --disable-fail-fast", engine=engine)
    assert (selection.errors, selection.fail_fast, selection.request.stage_run_args) == ((), False, ("--detailed-log",))


# Every /bot run flag, with the same request without it: (comment, the comment without the flag).
FLAG_WALK = {
    "reuse_test": ("/bot run --reuse-test", "/bot run"),
    "reuse_test=ID": ("/bot run --reuse-test 12", "/bot run"),
    "disable_reuse_test": ("/bot run --disable-reuse-test", "/bot run"),
    "disable_fail_fast": ("/bot run --disable-fail-fast", "/bot run"),
    "skip_test": ("/bot run --skip-test", "/bot run"),
    "stage_list": ('/bot run --stage-list "A10-CPP-1"', "/bot run"),
    "extra_stage": ('/bot run --extra-stage "A10-FMHA-Post-Merge-1"', "/bot run"),
    "gpu_type": ('/bot run --gpu-type "A30"', "/bot run"),
    "test_backend": ('/bot run --test-backend "triton"', "/bot run"),
    "add_multi_gpu_test": ("/bot run --add-multi-gpu-test", "/bot run"),
    "only_multi_gpu_test": ("/bot run --only-multi-gpu-test", "/bot run"),
    "disable_multi_gpu_test": ('/bot run --disable-multi-gpu-test --extra-stage "DGX_H100-4_GPUs-PyTorch-1"',
                               '/bot run --extra-stage "DGX_H100-4_GPUs-PyTorch-1"'),
    "post_merge": ("/bot run --post-merge", "/bot run"),
    "detailed_log": ("/bot run --detailed-log", "/bot run"),
    "debug": ('/bot run --stage-list "A10-CPP-1" --debug', '/bot run --stage-list "A10-CPP-1"'),
    "high_priority": ("/bot run --high-priority", "/bot run"),
    "disable_cbts": ("/bot run --disable-cbts", "/bot run"),
    "only_perf_sanity_test": ("/bot run --only-perf-sanity-test --post-merge", "/bot run --post-merge"),
}  # fmt: skip
# Flags whose effect is the run's, not the selection's, where the engine keeps a history: reuse on a local run
# selects from the history's passed stages (tests/ci_tool/run/test_reuse_cli.py pins that).
REUSE_BY_HISTORY = {("reuse_test", Engine.LOCAL), ("reuse_test=ID", Engine.LOCAL),
                    ("disable_reuse_test", Engine.LOCAL), ("disable_reuse_test", Engine.JENKINS),
                    ("disable_reuse_test", Engine.GITHUB)}  # fmt: skip
# --disable-cbts acts on the narrowing of a change, which select_stages is given made (test_cbts.py pins it).
ON_A_CHANGE = {("disable_cbts", engine) for engine in Engine}


def test_the_flag_walk_covers_every_run_flag() -> None:
    from ci_tool.bot.flags import SubCommand, flags_of

    assert {key.partition("=")[0] for key in FLAG_WALK} == {flag.key for flag in flags_of(SubCommand.RUN)}


# The pairs whose effect shows in the selection itself (the others are pinned where they act, above).
SELECTION_PAIRS = [(flag, engine) for flag in FLAG_WALK for engine in Engine
                   if (flag, engine) not in REUSE_BY_HISTORY | ON_A_CHANGE]  # fmt: skip


@pytest.mark.parametrize(("flag", "engine"), SELECTION_PAIRS, ids=[f"{f}-{e}" for f, e in SELECTION_PAIRS])
def test_no_flag_is_accepted_and_ignored_on_any_engine(flag: str, engine: Engine) -> None:
    """A flag changes what the engine is told (the selection record), adds a line saying what it changed, or
    refuses the run saying why; never nothing."""
    comment, without = FLAG_WALK[flag]
    given, plain = select(comment, engine=engine), select(without, engine=engine)
    assert given.refused or given.to_json() != plain.to_json()
    if given.refused:
        name = "--" + flag.partition("=")[0].replace("_", "-")
        assert [error.headline.split(":")[0] for error in given.refused] == [name]  # type: ignore[attr-defined]


def test_the_selection_json_carries_what_every_consumer_acts_on() -> None:
    selection = select('/bot run --post-merge --stage-list "A10-CPP-1, DGX_H100-4_GPUs-PyTorch-1"', labels=())
    data = selection.to_json()
    assert list(data) == [
        "stages", "blocked", "excluded", "missing_approvals", "fail_fast", "stage_run_args", "queue_priority",
        "debug_hold_minutes", "custom_run", "merge_gate", "notes", "errors", "cbts",
    ]  # fmt: skip
    assert (data["stages"], data["blocked"], data["fail_fast"], data["merge_gate"]) == (
        ["A10-CPP-1"],
        [{"stage": "DGX_H100-4_GPUs-PyTorch-1", "label": FULL_PRE_MERGE_APPROVED}],
        False,
        False,
    )


def test_only_perf_sanity_keeps_the_perf_sanity_stages_of_the_selection() -> None:
    pre, post = select("/bot run --only-perf-sanity-test"), select("/bot run --only-perf-sanity-test --post-merge")
    perf = [name for name in CATALOG.names if "-PerfSanity-" in name]
    assert pre.names == tuple(name for name in perf if "Post-Merge" not in name)
    assert post.names == tuple(perf) and post.custom_run
    reasons = {v.reason for v in post.excluded if v.step is Step.ONLY_PERF_SANITY}
    assert reasons == {"--only-perf-sanity-test: not PerfSanity"}


def test_the_old_multi_gpu_spelling_runs_as_the_current_one_and_says_so() -> None:
    old, new = select("/bot run --multi-gpu-test"), select("/bot run --only-multi-gpu-test")
    assert old.names == new.names and old.names
    assert old.notes == ("--multi-gpu-test is the old spelling of --only-multi-gpu-test: it ran as that",)


def test_an_empty_stage_list_is_taken_as_left_out() -> None:
    selection = select('/bot run --stage-list ""')
    assert (selection.names, selection.custom_run) == (select("/bot run").names, False)
    assert selection.notes == ('--stage-list "" names no stage: the usual selection runs, as if it were left out',)


@pytest.mark.parametrize(
    ("mode", "kept"),
    [
        (RunMode.NIGHTLY_RELEASE, lambda s: s.name.kind.value == "package_sanity"),
        (RunMode.RELEASE_CHECK, lambda s: not s.name.is_test),
    ],
    ids=["nightly_release", "release_check"],
)
def test_a_run_mode_keeps_its_stages_after_the_flags(mode: RunMode, kept: Callable[[Any], bool]) -> None:
    """On this repository's catalog, which has a docs stage and a package-sanity stage."""
    real = open_catalog(ROOT / "jenkins" / "stages.yml", ROOT / "test-db").catalog
    request = replace(parse_comment("/bot run --post-merge").selection_request(), run_mode=mode)
    selection = select_stages(real, request, engine=Engine.JENKINS, labels=APPROVED)
    assert selection.names == tuple(s.name.name for s in real.stages if kept(s))
    assert selection.custom_run and selection.names
    assert request_from_json(request.to_json()) == request  # CI's REQUEST carries the mode


def test_an_unknown_run_mode_is_refused_naming_the_modes() -> None:
    with pytest.raises(StageError) as raised:
        request_from_json({"command": "run", "flags": {}, "run_mode": "nightly"}, source="REQUEST")
    assert str(raised.value) == (
        "REQUEST (run_mode): expected one of full, nightly_release, release_check, found 'nightly' "
        "Hint: did you mean 'nightly_release'?"
    )


def test_the_json_payload_takes_the_old_multi_gpu_key() -> None:
    assert request_from_json({"command": "run", "flags": {"multi_gpu_test": True}}).only_multi_gpu_test
    with pytest.raises(StageError, match="expected 'only_multi_gpu_test' once, found it also as 'multi_gpu_test'"):
        request_from_json({"command": "run", "flags": {"only_multi_gpu_test": True, "multi_gpu_test": True}})
