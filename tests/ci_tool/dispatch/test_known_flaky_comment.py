"""The bot's final CI report comment sets failures of tests the history knows as flaky apart from new ones."""

from __future__ import annotations

import time
from pathlib import Path

from ci_tool.history.store import HistoryStore, TestRecord
from tests.ci_tool.history.planted import PASSED, failed, record_run
from tests.helpers.bot_handle import Bot, MakeEvent
from tests.helpers.dispatch_cases import PASSING, case
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins, Script

FLAKY = "tests.kv.test_pool.TestPool::test_d"  # as the build's JUnit names it


def test_a_known_flaky_failure_is_shown_apart_with_its_rate(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, tmp_path: Path
) -> None:
    with HistoryStore(tmp_path / "history.sqlite") as store:  # the bot's history (CI_TOOL_HISTORY)
        for number, test in enumerate([failed(FLAKY, "AssertionError: pool leaked <n> blocks"),
                                       TestRecord(FLAKY, PASSED, 2.0), TestRecord(FLAKY, PASSED, 2.0)]):  # fmt: skip
            record_run(store, f"r{number}", time.time() - 3600 * (3 - number), {"DGX_H100-PyTorch-2": (60.0, [test])})
    failing = (
        *PASSING[:3],
        case("DGX_H100-PyTorch-1", "test_d", "FAILED", "pool leaked 3 blocks"),
        case("CPU-Generic-1", "test_new", "FAILED", "off by one"),
    )
    jenkins.script = Script(result="FAILURE", downstream=(("FAILURE", failing),))
    handled = bot(event("/bot run"), "--wait")
    assert handled.code == 0, handled.err
    report = github.bodies()[-1]
    assert report.endswith(
        "### New failures: 1 test, 1 signature\n\n"
        "#### `AssertionError: off by one` (1 test)\n\n"
        "- `tests.kv.test_pool.TestPool::test_new` in `CPU-Generic-1`\n\n"
        "```text\nE   AssertionError: off by one\n```\n\n"
        "### Failures of known flaky tests: 1 test\n\n"
        "_flaky on the same GPU type before this run: likely not caused by this change._\n\n"
        f"- `{FLAKY}` in `DGX_H100-PyTorch-1`: flake rate 33% (1 of 3 runs on DGX_H100), "
        "`AssertionError: pool leaked <n> blocks`\n"
    )
