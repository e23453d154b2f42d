"""`ci-tool bot labels` against the loopback GitHub: an approver's approval adds `ci: full pre-merge approved`,
an approval label a non-approver applied is removed with a comment, and an unreadable allowlist fails closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.cli import main
from tests.helpers.approval_events import FULL, POST, labeled_event, signal_event
from tests.helpers.bot_handle import PR, REPOSITORY, Result
from tests.helpers.fake_github import FakeGitHub

ALLOWLIST_TEXT = "run: []\napprove: [Approver-Ann]\n"


@pytest.fixture
def allowlist(tmp_path: Path) -> Path:
    path = tmp_path / "allowlist.yml"
    path.write_text(ALLOWLIST_TEXT, encoding="utf-8")
    return path


def review_event(login: str, state: str = "approved") -> dict[str, object]:
    return {
        "action": "submitted",
        "review": {"state": state, "user": {"login": login}},
        "pull_request": {"number": PR, "state": "open", "labels": []},
        "repository": {"full_name": REPOSITORY},
        "sender": {"login": login},
    }


def labels(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, payload: dict[str, object], allowlist: Path, *options: str
) -> Result:
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    code = main(["bot", "labels", "--event", str(event), "--allowlist", str(allowlist), *options])
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


@pytest.mark.usefixtures("env")
def test_an_approvers_approving_review_adds_the_label(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, allowlist: Path
) -> None:
    result = labels(capsys, tmp_path, review_event("approver-ann"), allowlist)
    assert result == Result(
        0, f"decision: add: adding {FULL!r} to #{PR}: approved by 'approver-ann'\nadded {FULL!r} to #{PR}\n", ""
    )
    assert (github.pulls[(REPOSITORY, PR)].labels, github.label_events) == ([FULL], [("added", FULL)])


@pytest.mark.usefixtures("env")
def test_a_non_approvers_approving_review_adds_nothing(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, allowlist: Path
) -> None:
    result = labels(capsys, tmp_path, review_event("drive-by"), allowlist)
    assert result.code == 0
    assert result.out == (
        f"decision: nothing: not adding {FULL!r} to #{PR}: approved by 'drive-by', none of them "
        f"listed under 'approve' in {allowlist}\n"
    )
    assert (github.pulls[(REPOSITORY, PR)].labels, github.requests) == ([], [])


REMARKS = [("drive-by", "COMMENTED")] * 75  # GitHub lists 30 reviews a page: what follows them is on page 3


@pytest.mark.usefixtures("env")
@pytest.mark.parametrize(
    ("reviews", "added", "pages"),
    [
        ([("approver-ann", "APPROVED")], True, 1),
        ([("drive-by", "APPROVED")], False, 1),
        ([("approver-ann", "APPROVED"), ("approver-ann", "CHANGES_REQUESTED")], False, 1),
        ([("approver-ann", "APPROVED"), ("approver-ann", "COMMENTED")], True, 1),
        ([*REMARKS, ("approver-ann", "APPROVED")], True, 3),
        ([("approver-ann", "APPROVED"), *REMARKS, ("approver-ann", "CHANGES_REQUESTED")], False, 3),
    ],
    ids=[
        "approver",
        "non-approver",
        "changes requested since",
        "commented since",
        "approval on page 3",
        "changes requested on page 3",
    ],
)
def test_the_signal_reads_every_page_of_the_pull_requests_reviews_itself(
    github: FakeGitHub,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    allowlist: Path,
    reviews: list[tuple[str, str]],
    added: bool,
    pages: int,
) -> None:
    github.pulls[(REPOSITORY, PR)].reviews = reviews
    result = labels(capsys, tmp_path, signal_event(), allowlist, "--pull", f"{PR}\n")
    assert result.code == 0, result.err
    assert github.pulls[(REPOSITORY, PR)].labels == ([FULL] if added else [])
    assert github.count("GET", rf"/pulls/{PR}/reviews$") == pages


@pytest.mark.usefixtures("env")
def test_a_failed_signal_reads_nothing(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, allowlist: Path
) -> None:
    result = labels(capsys, tmp_path, signal_event("failure"), allowlist, "--pull", str(PR))
    assert result == Result(
        0, "decision: nothing: the approval signal 'approval-signal' ended 'failure', not 'success'\n", ""
    )
    assert github.requests == []


@pytest.mark.usefixtures("env")
def test_a_signal_run_by_another_event_reads_nothing(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, allowlist: Path
) -> None:
    payload = signal_event()
    payload["workflow_run"]["event"] = "workflow_dispatch"  # type: ignore[index]
    result = labels(capsys, tmp_path, payload, allowlist, "--pull", str(PR))
    assert result == Result(
        0,
        "decision: nothing: the run of 'approval-signal' was triggered by 'workflow_dispatch', "
        "not by 'pull_request_review'\n",
        "",
    )
    assert github.requests == []


@pytest.mark.usefixtures("env")
def test_a_label_a_non_approver_applied_is_removed_with_a_comment(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, allowlist: Path
) -> None:
    github.pulls[(REPOSITORY, PR)].labels = ["bug", POST]
    result = labels(capsys, tmp_path, labeled_event(POST, "drive-by"), allowlist)
    assert result.code == 0, result.err
    assert f"removed {POST!r} from #{PR}\n" in result.out
    assert github.pulls[(REPOSITORY, PR)].labels == ["bug"]
    assert github.bodies() == [
        f"Removed the label `{POST}` that @drive-by applied. Only the approvers listed under `approve` in "
        f"`{allowlist}` (@approver-ann) may apply it."
    ]
    # a rerun finds it gone: nothing removed, no second comment
    again = labels(capsys, tmp_path, labeled_event(POST, "drive-by"), allowlist)
    assert (again.code, again.out.splitlines()[-1]) == (0, f"#{PR} no longer has {POST!r}: nothing removed, no comment")
    assert len(github.bodies()) == 1


@pytest.mark.usefixtures("env")
@pytest.mark.parametrize(
    ("sender", "why"),
    [
        ("APPROVER-ANN", f"{FULL!r} was applied by 'APPROVER-ANN', listed under 'approve' in "),
        ("github-actions[bot]", f"{FULL!r} was applied by the bot itself ('github-actions[bot]')"),
    ],
    ids=["approver", "bot"],
)
def test_a_label_an_approver_or_the_bot_applied_stays(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, allowlist: Path, sender: str, why: str
) -> None:
    github.pulls[(REPOSITORY, PR)].labels = [FULL]
    result = labels(capsys, tmp_path, labeled_event(FULL, sender), allowlist)
    assert (result.code, result.out.startswith(f"decision: nothing: {why}")) == (0, True), result.out
    assert (github.pulls[(REPOSITORY, PR)].labels, github.requests) == ([FULL], [])


@pytest.mark.usefixtures("env")
def test_an_unreadable_allowlist_removes_the_label_and_fails(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = tmp_path / "allowlist.yml"
    broken.write_text("aprove: [approver-ann]\n", encoding="utf-8")
    github.pulls[(REPOSITORY, PR)].labels = [FULL]
    result = labels(capsys, tmp_path, labeled_event(FULL, "approver-ann"), broken)
    problem = (
        f"{broken}:1:1 (aprove): expected one of run, kill_skip, approve, found key 'aprove' "
        "Hint: did you mean 'approve'?"
    )
    assert result.code == 1
    assert result.err == f"error: {problem}\n"
    assert github.pulls[(REPOSITORY, PR)].labels == []
    (comment,) = github.bodies()
    assert comment.startswith(
        f"Removed the label `{FULL}` that @approver-ann applied: who may apply it could not be read ({problem})."
    )


@pytest.mark.usefixtures("env")
def test_an_unreadable_allowlist_adds_nothing_and_fails(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-allowlist.yml"
    github.pulls[(REPOSITORY, PR)].reviews = [("approver-ann", "APPROVED")]
    result = labels(capsys, tmp_path, signal_event(), missing, "--pull", str(PR))
    problem = f"{missing}: cannot read the allowlist: No such file or directory"
    assert result == Result(
        1,
        f"decision: nothing: not adding {FULL!r} to #{PR}: who may approve could not be read ({problem})\n",
        f"error: {problem}\n",
    )
    assert (github.pulls[(REPOSITORY, PR)].labels, github.requests) == ([], [])


@pytest.mark.usefixtures("env")
def test_a_dry_run_changes_nothing(
    github: FakeGitHub, capsys: pytest.CaptureFixture[str], tmp_path: Path, allowlist: Path
) -> None:
    github.pulls[(REPOSITORY, PR)].labels = [FULL]
    result = labels(capsys, tmp_path, labeled_event(FULL, "drive-by"), allowlist, "--dry-run")
    assert result.code == 0
    assert f"would remove {FULL!r} on #{PR}\nwould comment: Removed the label" in result.out
    assert (github.pulls[(REPOSITORY, PR)].labels, github.requests) == ([FULL], [])
