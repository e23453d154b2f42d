"""The bot's final CI report shows each perf case's gated values, baselines, deltas and verdicts, read from the
`ci_tool.perf` property of the build's test report (what the perf-sanity fixture wrote), post-merge
warnings called out above the table and the metrics recorded only named below it."""

from __future__ import annotations

from ci_tool.history.perf_results import PerfResult
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.transport import PERF_PROPERTY, to_property
from tests.helpers.bot_handle import Bot, MakeEvent
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins, Script

STAGE = "DGX_B200-PyTorch-PerfSanity-Post-Merge-1"
CASE = "gpu-gemma_like-pool4g-b80"
NOTE = "decode_tokens_per_s 3.4e+04 tokens/s is 15.0% worse than its baseline 4e+04 (threshold 10%)"
ROWS = (
    PerfResult("", STAGE, CASE, "B200", "decode_tokens_per_s", 34000.0, PerfVerdict.WARNED, 0.0, 40000.0, 0.1, NOTE),
    PerfResult("", STAGE, CASE, "B200", "step_latency_p50_ms", 2.0, PerfVerdict.PASSED, 0.0, 2.1, 0.15),
    PerfResult("", STAGE, CASE, "B200", "graph_coverage", 1.0, PerfVerdict.RECORDED, 0.0),
)


def perf_case(properties: dict[str, str]) -> dict[str, object]:
    """A perf case of a Jenkins test report with its testcase properties (the junit step's keepProperties)."""
    return {"className": f"{STAGE}.tests.perf.test_perf_sanity", "name": f"test_e2e[{CASE}]", "status": "PASSED",
            "duration": 30.0, "properties": properties}  # fmt: skip


def test_the_ci_report_shows_the_perf_verdicts_the_build_recorded(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    cases = (perf_case({PERF_PROPERTY: to_property(ROWS), "perf_gate": "warn"}),)
    jenkins.script = Script(result="SUCCESS", downstream=(("SUCCESS", cases),))
    handled = bot(event(f'/bot run --stage-list "{STAGE}"'), "--wait")
    assert handled.code == 0, handled.err
    assert (
        "\n### Perf: 1 case run(s)\n\n"
        f"- warning in `{STAGE}`: `{NOTE}`\n\n"
        "| Case | GPU | Metric | Value | Baseline | Delta | Verdict |\n"
        "|---|---|---|---:|---:|---:|---|\n"
        f"| `{CASE}` | `B200` | `decode_tokens_per_s` | 3.4e+04 | 4e+04 | -15.0% | warned: `{NOTE}` |\n"
        f"| `{CASE}` | `B200` | `step_latency_p50_ms` | 2 | 2.1 | -4.8% | passed |\n"
        "\nAlso recorded, not gated: `graph_coverage`\n"
    ) in github.bodies()[-1]


def test_a_build_without_perf_properties_has_no_perf_section(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    cases = (perf_case({PERF_PROPERTY: "not the JSON the fixture writes"}),)
    jenkins.script = Script(result="SUCCESS", downstream=(("SUCCESS", cases),))
    handled = bot(event(f'/bot run --stage-list "{STAGE}"'), "--wait")
    assert handled.code == 0, handled.err
    assert "### Perf" not in github.bodies()[-1] and "1 passed" in github.bodies()[-1]
