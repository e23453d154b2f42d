"""The bot's final CI report of a build whose stage the infrastructure lost once: L0_Test ran it again on a
fresh agent as `<stage>-attempt-2` (its JUnit prefixed with that name), and the report names that attempt and
shows it unstable, not passed; a test failure on the attempt is a failure."""

from __future__ import annotations

from ci_tool.outcomes import TestOutcome
from tests.helpers.actions_cases import FULL, RUN_REQUEST
from tests.helpers.bot_handle import Bot, MakeEvent
from tests.helpers.dispatch_cases import DEFAULT_STAGES, SHA, statuses
from tests.helpers.fake_actions import Script as ActionsScript
from tests.helpers.fake_actions import ScriptedBackend, junit_zip, selection_zip, zipped
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins, Script

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


# On GitHub Actions the lost runner's job stays failed, so GitHub concludes the run `failure`; the bot reads the
# run's artifacts: every stage passed, one on its second attempt, so the run is unstable, not failed.
def lost_and_retried(stages: list[str], lost: str, *, failing_retry: bool = False) -> dict[str, bytes]:
    found = {"ci-tool-selection": selection_zip(stages, RUN_REQUEST, head=SHA)}
    for stage in stages:
        ran = f"{stage}-attempt-2" if stage == lost else stage
        outcome = TestOutcome.FAILED if stage == lost and failing_retry else TestOutcome.PASSED
        found[f"results-{ran}"] = junit_zip(ran, [("tests/kv/test_pool.py::test_pool", outcome)])
    found[f"results-{lost}"] = zipped({"rendered.txt": "tests/kv/test_pool.py\n"})  # the lost attempt's: no JUnit
    return found


def test_an_actions_run_failed_only_by_a_lost_runner_whose_retry_passed_is_unstable(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    script = ActionsScript(conclusion="failure", artifacts=lost_and_retried(DEFAULT_STAGES, "A10-PyTorch-2"))
    github.actions.backend = ScriptedBackend(script)
    result = bot(event("/bot run"), "--wait")
    assert result.code == 0, result.err
    assert statuses(github)[-1] == (SHA[:7], FULL, "failure", "unstable: 4 passed, 0 failed, 0 skipped")
    report = github.bodies()[-1]
    assert "**UNSTABLE**" in report and f"| `A10-PyTorch-2-attempt-2` | **unstable** (`{REASON}`)" in report


def test_an_actions_run_whose_retry_failed_stays_failed(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    artifacts = lost_and_retried(DEFAULT_STAGES, "A10-PyTorch-2", failing_retry=True)
    github.actions.backend = ScriptedBackend(ActionsScript(conclusion="failure", artifacts=artifacts))
    assert bot(event("/bot run"), "--wait").code == 0
    assert statuses(github)[-1] == (SHA[:7], FULL, "failure", "3 passed, 1 failed, 0 skipped")
