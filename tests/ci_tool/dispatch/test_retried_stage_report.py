"""The bot's final CI report of a build whose stage the infrastructure lost once: L0_Test ran it again on a
fresh agent as `<stage>-attempt-2` (its JUnit prefixed with that name), and the report names that attempt and
shows it unstable, not passed; a test failure on the attempt is a failure."""

from __future__ import annotations

from tests.ci_tool.dispatch.conftest import Bot, MakeEvent
from tests.ci_tool.dispatch.fake_github import FakeGitHub
from tests.ci_tool.dispatch.fake_jenkins import FakeJenkins, Script

STAGE = "A10-PyTorch-1"
REASON = "attempt 2: run again after the infrastructure lost attempt 1 (its agent or runner)"


def case(ran_as: str, name: str, status: str = "PASSED") -> dict[str, object]:
    return {"className": f"{ran_as}.tests.test_x", "name": name, "status": status, "duration": 1.0}


def test_a_stage_that_passed_on_its_second_attempt_is_reported_by_that_name_as_unstable(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    cases = (case(f"{STAGE}-attempt-2", "test_a"), case(f"{STAGE}-attempt-2", "test_b"))
    jenkins.script = Script(result="UNSTABLE", downstream=(("UNSTABLE", cases),))
    handled = bot(event(f'/bot run --stage-list "{STAGE}"'), "--wait")
    assert handled.code == 0, handled.err
    body = github.bodies()[-1]
    assert "**UNSTABLE**" in body and "2 passed, 0 failed, 0 skipped" in body
    row = next(line for line in body.splitlines() if f"`{STAGE}-attempt-2`" in line)
    assert "unstable" in row and REASON in row, row
    assert f"`{STAGE}` " not in body  # the stage is shown once, by the name of the attempt that ran


def test_a_test_failure_on_the_second_attempt_fails_the_stage(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    cases = (case(f"{STAGE}-attempt-2", "test_a"), case(f"{STAGE}-attempt-2", "test_b", "FAILED"))
    jenkins.script = Script(result="FAILURE", downstream=(("FAILURE", cases),))
    handled = bot(event(f'/bot run --stage-list "{STAGE}"'), "--wait")
    assert handled.code == 0, handled.err
    row = next(line for line in github.bodies()[-1].splitlines() if f"`{STAGE}-attempt-2`" in line)
    assert "failed" in row, row
