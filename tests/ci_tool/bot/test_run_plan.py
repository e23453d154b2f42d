"""`/bot run` resolved against the catalog: `ci-tool bot plan` output pinned per comment, the plan JSON,
how the plan settles the bot's decision, and requests read back from JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ci_tool.bot.authorize import parse_allowlist
from ci_tool.bot.event import Action, decide, read_event
from ci_tool.bot.reply import render_reply
from ci_tool.bot.run_plan import plan_run
from ci_tool.cli import main
from ci_tool.pr_bot.settle import settle
from ci_tool.stages.catalog_load import open_catalog
from tests.ci_tool.change.checkout import pull_request_checkout

if TYPE_CHECKING:
    from tests.helpers.golden import Golden

FIXTURES = Path(__file__).parent / "fixtures"
PLANS = Path(__file__).parent / "plans"
CATALOG = ("--catalog", str(FIXTURES / "stages.yml"), "--test-db", str(FIXTURES / "test-db"))
LOADED = open_catalog(FIXTURES / "stages.yml", FIXTURES / "test-db")
ALLOWLIST = parse_allowlist((FIXTURES / "allowlist.yml").read_text(encoding="utf-8"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# id -> (comment, extra arguments, exit code); the output is pinned in plans/<id>.md
PLAN_CASES = {
    "default": ("/bot run", (), 0),
    "post_merge_unlabeled": ("/bot run --post-merge --disable-fail-fast", (), 0),
    "post_merge_labeled": ("/bot run --post-merge", ("--label", "ci: post-merge approved"), 0),
    "stage_list_unknown": ('/bot run --stage-list "A10-PyTorch-\\*, A30-*, DGX_H100-Pytorch-1"', (), 1),
    "gpu_type": ('/bot run --gpu-type "A10"', (), 0),
    "stage_list_spelt_broad": ('/bot run --stage-list "*erfSanity*"', (), 0),  # selects what *PerfSanity* does
    "stage_list_broad_share": ('/bot run --stage-list "CPU-*, A10-*, DGX_H100-*"', (), 0),  # 5 of the 6 stages
    "kill": ("/bot kill", (), 0),
}


@pytest.mark.parametrize(("comment", "extra", "code"), PLAN_CASES.values(), ids=PLAN_CASES.keys())
def test_bot_plan_output_is_pinned(
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    golden: Golden,
    comment: str,
    extra: tuple[str, ...],
    code: int,
) -> None:
    got, out, err = run(capsys, "bot", "plan", comment, *extra, *CATALOG)
    assert (got, err) == (code, "")
    golden(PLANS / f"{request.node.callspec.id}.md", out)


def test_bot_plan_of_a_pull_request_that_changes_a_multi_gpu_path_is_pinned(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, golden: Golden
) -> None:
    """The change read from git (`--base`/`--head`, as every job passes it): a multi-GPU path adds the
    multi-GPU stage, blocked until its label."""
    changed = {"src/distributed/all_reduce.py": "x = 1\n", "README.md": "# changed\n"}
    monkeypatch.chdir(pull_request_checkout(tmp_path / "checkout", changed))
    got, out, err = run(capsys, "bot", "plan", "/bot run", "--base", "main", "--head", "pr", *CATALOG)
    assert (got, err) == (0, "")
    golden(PLANS / "changed_multi_gpu_path.md", out)


def test_bot_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "bot", "plan", '/bot run --stage-list "A10-PyTorch-*"', "--json", *CATALOG)
    plan = json.loads(out)
    assert code == 0
    assert plan["request"] == {"command": "run", "flags": {"stage_list": ["A10-PyTorch-*"]}}
    assert plan["stages"] == [
        {
            "name": "A10-PyTorch-1",
            "platform": "a10",
            "shard": 1,
            "splits": 2,
            "tests": 1,
            "predicted_minutes": 3.0,
            "step": 13,
            "reason": "--stage-list matches 'A10-PyTorch-*'",
        },
        {
            "name": "A10-PyTorch-2",
            "platform": "a10",
            "shard": 2,
            "splits": 2,
            "tests": 2,
            "predicted_minutes": 3.75,
            "step": 13,
            "reason": "--stage-list matches 'A10-PyTorch-*'",
        },
    ]
    assert (plan["custom_run"], plan["merge_gate"], plan["missing_approvals"], plan["errors"]) == (True, False, [], [])
    assert [entry["stage"] for entry in plan["excluded"]] == [
        "CPU-Generic-1",
        "DGX_H100-PyTorch-1",
        "DGX_H100-4_GPUs-PyTorch-1",
        "DGX_B200-PyTorch-PerfSanity-Post-Merge-1",
    ]


def test_bot_plan_reads_the_comment_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO('/bot run --gpu-type "A10"\n\nplease\n'))
    code, out, _ = run(capsys, "bot", "plan", "-", "--json", *CATALOG)
    assert (code, [stage["name"] for stage in json.loads(out)["stages"]]) == (0, ["A10-PyTorch-1", "A10-PyTorch-2"])


def event(body: str, labels: tuple[str, ...] = ()) -> dict[str, object]:
    payload = json.loads((FIXTURES / "event_run_member.json").read_text(encoding="utf-8"))
    payload["comment"]["body"] = body
    payload["issue"]["labels"] = [{"name": label} for label in labels]
    return payload


# comment, labels -> (action, reason) once the plan settles the decision
SETTLED = {
    "dispatch": ("/bot run", (), Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    "unknown names": (
        '/bot run --stage-list "A30-1, A10-PyTorch-9"',
        (),
        Action.HELP,
        "not in the stage catalog at columns 24, 31",
    ),
    "multi-GPU by name": (
        '/bot run --extra-stage "DGX_H100-4_GPUs-PyTorch-1"',
        (),
        Action.REFUSE,
        "missing label 'ci: full pre-merge approved'",
    ),
    "multi-GPU by a flag": (
        "/bot run --add-multi-gpu-test",
        (),
        Action.REFUSE,
        "missing label 'ci: full pre-merge approved'",
    ),
    "labelled": (
        '/bot run --extra-stage "DGX_H100-4_GPUs-PyTorch-1"',
        ("ci: full pre-merge approved",),
        Action.DISPATCH,
        "/bot run by 'maintainer-amy' (author association MEMBER)",
    ),
}


@pytest.mark.parametrize(("body", "labels", "action", "reason"), SETTLED.values(), ids=SETTLED.keys())
def test_the_plan_settles_the_decision(body: str, labels: tuple[str, ...], action: Action, reason: str) -> None:
    decision = decide(read_event(event(body, labels)), ALLOWLIST)
    assert decision.request is not None
    plan = plan_run(
        decision.request.selection_request(),
        loaded=LOADED,
        labels=labels,
    )
    settled = settle(decision, plan)
    assert (settled.action, settled.reason) == (action, reason)
    if action is Action.HELP:
        assert settled.error is not None and settled.error.col == 24


def test_a_comment_naming_thousands_of_unknown_stages_gets_a_short_reply() -> None:
    names = ", ".join(f"A10-PyTroch-{k}" for k in range(1, 2001))
    decision = decide(read_event(event(f'/bot run --stage-list "{names}"')), ALLOWLIST)
    assert decision.request is not None
    plan = plan_run(
        decision.request.selection_request(), loaded=LOADED
    )
    settled = settle(decision, plan)
    reply = render_reply(settled, plan=plan)
    assert reply is not None
    assert settled.reason == "not in the stage catalog at columns 24, 39, 54, 69, 84 and 1995 more columns"
    carets = sum(line.strip() == "^" for line in reply.splitlines())
    assert (carets, reply.count("and 1995 more errors, not shown")) == (5, 1)
    assert len(reply) < 5_000  # one caret block per name made it megabytes


def test_settle_leaves_other_decisions_alone() -> None:
    payload = event("/bot run --post-merge")
    payload["comment"]["author_association"] = "CONTRIBUTOR"
    payload["comment"]["user"]["login"] = payload["sender"]["login"] = "stranger"
    decision = decide(read_event(payload), ALLOWLIST)  # refused: no permission
    assert decision.action is Action.REFUSE and decision.request is not None
    plan = plan_run(
        decision.request.selection_request(), loaded=LOADED
    )
    assert settle(decision, plan) is decision
