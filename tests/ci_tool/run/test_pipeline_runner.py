"""Pipeline logic with tiny fake stage runs: runner matching, fail-fast, waiting stages, overall state."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ci_tool.outcomes import StageState
from ci_tool.run.pipeline import (
    PipelineResult,
    StageOutcome,
    gpu_family_matches,
    run_pipeline,
    runner_mismatch,
)
from ci_tool.stages.names import StageName, parse_stage_name

NO_GPU = {"gpu": None, "system_gpu_count": 0}
ONE_A10 = {"gpu": "A10", "system_gpu_count": 1}


@pytest.mark.parametrize(
    ("token", "gpu_name", "matches"),
    [
        ("A10", "A10", True),
        ("A10", "A100-SXM4-80GB", False),
        ("H100_PCIe", "H100 PCIE", True),
        ("DGX_H100", "H100 80GB HBM3", True),
        ("RTXPro6000D", "RTX PRO 6000D", True),
        ("B200", "GB200", False),
    ],
    ids=["equal", "a10-not-a100", "pcie", "dgx-prefix", "joined-words", "b200-not-gb200"],
)
def test_gpu_family_matches(token: str, gpu_name: str, matches: bool) -> None:
    assert gpu_family_matches(token, gpu_name) is matches


@pytest.mark.parametrize(
    ("stage", "sysinfo", "reason"),
    [
        ("CPU-Generic-1", NO_GPU, None),
        ("CPU-Generic-1", ONE_A10, None),
        ("A10-PyTorch-1", ONE_A10, None),
        ("A10-PyTorch-1", NO_GPU, "needs 1 A10 GPU; this machine has no GPU"),
        ("H100_PCIe-PyTorch-1", ONE_A10, "needs 1 H100_PCIe GPU; this machine has A10"),
        ("A10-2_GPUs-PyTorch-1", ONE_A10, "needs 2 A10 GPUs; this machine has 1"),
        ("GB200-4_GPUs-2_Nodes-PyTorch-1", ONE_A10, "needs 2 nodes"),
        ("CPU-Build_Docs", NO_GPU, None),
        ("CPU-PackageSanityCheck-PY311", NO_GPU, None),
        ("Build-Docker-Images", NO_GPU, "docker images stages run only on CI runners"),
        ("CPU-AgentFlow-UnitTest", NO_GPU, "agent flow stages run only on CI runners"),
        ("A10-PyTorch-1", {"gpu": "A10", "system_gpu_count": "\u00b2"}, "needs 1 A10 GPU; this machine has no GPU"),
        ("A10-PyTorch-1", {"gpu": "A10", "system_gpu_count": "9" * 5000}, "needs 1 A10 GPU; this machine has no GPU"),
        ("A10-2_GPUs-PyTorch-1", {"gpu": "A10", "system_gpu_count": "8"}, None),
    ],
    ids=[
        "cpu",
        "cpu-on-gpu-machine",
        "gpu",
        "no-gpu",
        "other-gpu",
        "too-few",
        "multi-node",
        "docs-job",
        "package-sanity-job",
        "no-docker-job",
        "no-agent-flow-job",
        "superscript-count",
        "count-of-thousands-of-digits",
        "count-as-text",
    ],
)
def test_runner_mismatch(stage: str, sysinfo: dict[str, object], reason: str | None) -> None:
    assert runner_mismatch(parse_stage_name(stage), sysinfo) == reason  # type: ignore[arg-type]


@dataclass(frozen=True)
class FakeStage:
    """Only what the pipeline reads."""

    name: StageName


class FakeRunner:
    """Ends each stage in the state `states` gives it. `capacity` stages run at once (1: the local
    executor; more: the Slurm executor, whose stages all start at once); a cancel ends the running ones."""

    def __init__(self, states: dict[str, str], capacity: int) -> None:
        self.states, self.capacity = states, capacity
        self.started: list[str] = []
        self.queue: list[StageOutcome] = []

    def can_start(self, name: StageName) -> bool:
        return len(self.queue) < self.capacity

    def start(self, stage: FakeStage) -> None:
        self.started.append(stage.name.name)
        self.queue.append(StageOutcome(stage.name.name, StageState(self.states[stage.name.name]), ran=True))

    def running(self) -> int:
        return len(self.queue)

    def next_finished(self) -> StageOutcome:
        return self.queue.pop(0)

    def cancel(self, reason: str) -> None:
        self.queue = [StageOutcome(o.name, StageState.SKIPPED, reason) for o in self.queue]


def _pipeline(
    states: dict[str, str], *, fail_fast: bool, sysinfo: dict[str, object] = NO_GPU, capacity: int = 1
) -> tuple[PipelineResult, list[str]]:
    runner = FakeRunner(states, capacity)
    stages = [FakeStage(parse_stage_name(name)) for name in states]
    result = run_pipeline(
        stages,
        mismatch=lambda name: runner_mismatch(name, sysinfo),  # type: ignore[arg-type]
        fail_fast=fail_fast,
        runner=runner,
        not_run=lambda o: None,
    )
    return result, runner.started


def test_fail_fast_skips_the_rest() -> None:
    result, ran = _pipeline(
        {"CPU-Generic-1": "failed", "CPU-Generic-2": "passed", "A10-PyTorch-1": "passed"}, fail_fast=True
    )
    assert ran == ["CPU-Generic-1"]
    assert [(o.name, o.state, o.reason) for o in result.stages[1:]] == [
        ("CPU-Generic-2", "skipped", "fail-fast: CPU-Generic-1 failed"),
        ("A10-PyTorch-1", "skipped", "fail-fast: CPU-Generic-1 failed"),
    ]


def test_without_fail_fast_every_stage_runs() -> None:
    result, ran = _pipeline({"CPU-Generic-1": "failed", "CPU-Generic-2": "passed"}, fail_fast=False)
    assert (ran, result.state) == (["CPU-Generic-1", "CPU-Generic-2"], "failed")


def test_unstable_does_not_stop_the_pipeline() -> None:
    result, ran = _pipeline({"CPU-Generic-1": "unstable", "CPU-Generic-2": "passed"}, fail_fast=True)
    assert (ran, result.state) == (["CPU-Generic-1", "CPU-Generic-2"], "unstable")


def test_gpu_stages_wait_for_a_runner() -> None:
    result, ran = _pipeline({"CPU-Generic-1": "passed", "A10-PyTorch-1": "passed"}, fail_fast=True)
    assert ran == ["CPU-Generic-1"]
    assert (result.stages[1].state, result.state, result.waiting) == ("waiting", "pending", 1)


def test_interrupt_stops_the_pipeline() -> None:
    result, ran = _pipeline({"CPU-Generic-1": "interrupted", "CPU-Generic-2": "passed"}, fail_fast=False)
    assert (ran, result.state, result.stages[1].reason) == (
        ["CPU-Generic-1"],
        "interrupted",
        "not started: the run was interrupted",
    )


def test_with_every_stage_started_at_once_fail_fast_cancels_the_others_and_keeps_the_order() -> None:
    states = {
        "CPU-Generic-1": "passed",
        "CPU-Generic-2": "failed",
        "CPU-Generic-3": "passed",
        "A10-PyTorch-1": "passed",
    }
    result, ran = _pipeline(states, fail_fast=True, capacity=10)
    assert ran == ["CPU-Generic-1", "CPU-Generic-2", "CPU-Generic-3"]
    assert [(o.name, o.state, o.reason) for o in result.stages] == [
        ("CPU-Generic-1", "passed", ""),
        ("CPU-Generic-2", "failed", ""),
        ("CPU-Generic-3", "skipped", "cancelled by fail-fast: CPU-Generic-2 failed"),
        ("A10-PyTorch-1", "waiting", "needs 1 A10 GPU; this machine has no GPU"),
    ]


class RoomRunner(FakeRunner):
    """Room as run/resources.py gives it: two stages at once, a perf stage alone, and any room for a stage
    this machine does not serve (it never starts here)."""

    def __init__(self, states: dict[str, str], log: list[str]) -> None:
        super().__init__(states, capacity=2)
        self.log = log

    def can_start(self, name: StageName) -> bool:
        if runner_mismatch(name, NO_GPU) is not None:  # type: ignore[arg-type]
            return True
        return not self.queue if name.policy.runs_alone else len(self.queue) < 2

    def start(self, stage: FakeStage) -> None:
        self.log.append(f"start {stage.name.name}")
        super().start(stage)

    def next_finished(self) -> StageOutcome:
        finished = super().next_finished()
        self.log.append(f"end {finished.name}")
        return finished


def test_while_a_perf_stage_waits_for_the_host_later_stages_start_and_waiting_ones_are_reported() -> None:
    states = {"CPU-Generic-1": "passed", "CPU-Generic-PerfSanity-1": "passed", "A10-PyTorch-1": "passed",
              "CPU-Generic-2": "passed"}  # fmt: skip
    log: list[str] = []
    result = run_pipeline(
        [FakeStage(parse_stage_name(name)) for name in states],
        mismatch=lambda name: runner_mismatch(name, NO_GPU),  # type: ignore[arg-type]
        fail_fast=True,
        runner=RoomRunner(states, log),
        not_run=lambda outcome: log.append(f"{outcome.state} {outcome.name}"),
    )
    assert log == [
        "start CPU-Generic-1",
        "waiting A10-PyTorch-1",
        "start CPU-Generic-2",
        "end CPU-Generic-1",
        "end CPU-Generic-2",
        "start CPU-Generic-PerfSanity-1",
        "end CPU-Generic-PerfSanity-1",
    ]
    assert [outcome.name for outcome in result.stages] == list(states)
