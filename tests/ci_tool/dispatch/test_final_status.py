"""--wait's final status: never success without a test result to show for it, and never lost to a test report
detail of an unexpected shape."""

from __future__ import annotations

import pytest

from tests.helpers.bot_handle import Bot, MakeEvent
from tests.helpers.dispatch_cases import FULL, SHA, case, statuses
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins, Script


@pytest.mark.parametrize(
    ("downstream", "description"),
    [((), "no L0_Test build found for build 1: nothing was tested"),
     ((("SUCCESS", ()),), "no test report found for build 1: nothing was tested")],
    ids=["no test job", "a test job without a report"],
)  # fmt: skip
def test_a_build_that_passed_without_test_results_is_no_success(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, downstream: tuple, description: str
) -> None:
    jenkins.script = Script(result="SUCCESS", downstream=downstream)
    result = bot(event("/bot run"), "--wait")
    assert result.code == 0, result.err
    assert statuses(github)[-1] == (SHA[:7], FULL, "error", description)
    assert github.statuses[-1]["target_url"] == jenkins.triggered()[0].url


def test_a_case_duration_that_is_no_number_does_not_cost_the_final_status(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    odd = {**case("CPU-Generic-1", "test_a", "PASSED"), "duration": "abc"}
    jenkins.script = Script(result="SUCCESS", downstream=(("SUCCESS", (odd,)),))
    result = bot(event("/bot run"), "--wait")
    # the fake build archives no run record: the one warning, and the counts say some results were unreadable
    warning = "warning: could not read the run record (build 1 archived no selection.json)\n"
    assert (result.code, result.err) == (0, warning)
    assert statuses(github)[-1] == (SHA[:7], FULL, "success", "1 passed, 0 failed, 0 skipped; some results unreadable")
    assert "| `CPU-Generic-1` | **passed** | 0.0 s | 1 | 0 | 0 |" in github.bodies()[-1]
