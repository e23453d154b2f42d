"""Test modes: what kind of run a stage is, and everything that follows from it.

The stage-name grammar (`names.py`) decides the mode from the tags; this module says what each mode
implies, so that no other module tests for "Perf" substrings:

    mode         tag           sharded  extra pytest options   perf gate                            runs alone
    functional   (none)        yes      none                   none                                 no
    perf         `Perf`        no       PERF_PYTEST_ARGS       fail                                 yes
    perf_sanity  `PerfSanity`  yes      none                   fail in pre-merge, warn in post-merge yes

"Runs alone": no other stage shares its host, on every executor (timings taken beside another stage
measure the neighbour): the local runner runs one stage at a time, Slurm jobs are `--exclusive`, and the
generated Jenkins and GitHub stages ask for a `<platform>-perf` agent, a pool no other stage asks for.

`FUNCTIONAL-ONLY` turns any failing gate into a warning: perf never fails that stage.

`PerfSanity` is not perf mode: its tests are ordinary pytest cases that gate on regressions themselves
(TensorRT-LLM's `-Perf-` predicate excludes it on purpose; review bots keep asking to "fix" that).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass


class TestMode(enum.Enum):
    """What kind of run a test stage is; the value is the JSON spelling."""

    __test__ = False  # not a pytest test class despite the name

    FUNCTIONAL = "functional"
    PERF = "perf"
    PERF_SANITY = "perf_sanity"


class PerfGate(enum.Enum):
    """What a perf regression does to the stage."""

    NONE = "none"  # no perf results are gated
    WARN = "warn"  # reported, the stage still passes
    FAIL = "fail"  # the stage fails


# The runner exports the stage's gate to its pytest processes under this name (see ci_tool.perf.fixture).
PERF_GATE_ENV = "CI_TOOL_PERF_GATE"

# Perf mode's pytest options: log every numeric property a test records (ci_tool.run.perf_log). The
# reference also locks GPU clocks; ci-tool leaves clocks alone, since runners are often shared machines.
PERF_PYTEST_ARGS: tuple[str, ...] = ("--perf", "--perf-log-formats", "csv", "--perf-log-formats", "yaml")


@dataclass(frozen=True)
class ModePolicy:
    """How a stage of a given mode runs.

    `sharded`: the rendered list is split across the family's shards by duration and ISOLATION tests
    run one per process; when False (perf mode) every shard runs the whole rendered list in one process.
    """

    mode: TestMode
    sharded: bool
    pytest_args: tuple[str, ...]
    perf_gate: PerfGate
    runs_alone: bool = False  # no other stage may share its host (timings are its result)


def mode_policy(mode: TestMode, *, post_merge: bool, functional_only: bool) -> ModePolicy:
    """The policy of `mode` for a pre- or post-merge stage, with or without `FUNCTIONAL-ONLY`."""
    if mode is TestMode.FUNCTIONAL:
        return ModePolicy(mode, sharded=True, pytest_args=(), perf_gate=PerfGate.NONE)
    if mode is TestMode.PERF:
        gate = PerfGate.WARN if functional_only else PerfGate.FAIL
        return ModePolicy(mode, sharded=False, pytest_args=PERF_PYTEST_ARGS, perf_gate=gate, runs_alone=True)
    gate = PerfGate.WARN if functional_only or post_merge else PerfGate.FAIL
    return ModePolicy(mode, sharded=True, pytest_args=(), perf_gate=gate, runs_alone=True)


RAN_ALONE = "ran alone"  # how plans and reports say a stage had its host to itself


def perf_gate_from_env(environ: Mapping[str, str]) -> PerfGate:
    """The gate a stage's runner exported; a plain pytest run (no variable) gates strictly."""
    try:
        return PerfGate(environ.get(PERF_GATE_ENV, PerfGate.FAIL.value))
    except ValueError:
        return PerfGate.FAIL
