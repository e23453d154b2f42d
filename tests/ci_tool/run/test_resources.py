"""The host's room for stages (run/resources.py) and the catalog order of a run's records (run/catalog_order.py)."""

from __future__ import annotations

import pytest

from ci_tool.run.catalog_order import CatalogOrder
from ci_tool.run.resources import HostCapacity, Slots, StageNeeds, run_stage_cores, stage_cores, stage_needs
from ci_tool.stages.names import parse_stage_name

CPU = StageNeeds(cores=1, gpus=0, alone=False)
ONE_GPU = StageNeeds(cores=1, gpus=1, alone=False)
TWO_GPUS = StageNeeds(cores=1, gpus=2, alone=False)
PERF = StageNeeds(cores=1, gpus=0, alone=True)


@pytest.mark.parametrize(
    ("stage", "needs"),
    [
        ("CPU-Generic-1", CPU),
        ("CPU-Build_Docs", CPU),
        ("CPU-PackageSanityCheck-PY311", CPU),
        ("A10-PyTorch-1", ONE_GPU),
        ("DGX_H100-2_GPUs-PyTorch-1", TWO_GPUS),
        ("CPU-Generic-PerfSanity-1", PERF),
        ("DGX_H200-PyTorch-Perf-1", StageNeeds(cores=1, gpus=1, alone=True)),
    ],
    ids=["cpu", "docs", "package-sanity", "one-gpu", "two-gpus", "perf-sanity", "perf"],
)
def test_stage_needs_from_the_name(stage: str, needs: StageNeeds) -> None:
    assert stage_needs(parse_stage_name(stage)) == needs


@pytest.mark.parametrize(
    ("jobs", "devices", "held", "asked", "fits"),
    [
        (2, (), [], PERF, True),
        (2, (), [CPU], CPU, True),
        (2, (), [CPU, CPU], CPU, False),
        (4, (), [CPU], PERF, False),
        (4, (), [PERF], CPU, False),
        (4, ("0", "1"), [ONE_GPU], ONE_GPU, True),
        (4, ("0", "1"), [ONE_GPU], TWO_GPUS, False),
        (4, ("0",), [ONE_GPU], CPU, True),
        (1, (), [], TWO_GPUS, True),
    ],
    ids=[
        "empty-host-takes-perf",
        "room-for-two",
        "bound-reached",
        "perf-waits-for-an-empty-host",
        "nothing-beside-perf",
        "second-gpu-free",
        "gpus-taken",
        "cpu-beside-gpu",
        "empty-host-takes-any",
    ],
)
def test_what_fits(jobs: int, devices: tuple[str, ...], held: list[StageNeeds], asked: StageNeeds, fits: bool) -> None:
    slots = Slots(jobs, devices)
    for needs in held:
        slots.take(needs)
    assert slots.fits(asked) is fits


def test_gpu_stages_get_disjoint_devices_and_give_them_back() -> None:
    slots = Slots(4, ("2", "5", "7"))
    first, second = slots.take(ONE_GPU), slots.take(TWO_GPUS)
    cpu = slots.take(CPU)
    assert (first.devices, second.devices, cpu.devices) == (("2",), ("5", "7"), ())
    assert [slots.variables(grant) for grant in (first, second, cpu)] == [
        {"CUDA_VISIBLE_DEVICES": "2"},
        {"CUDA_VISIBLE_DEVICES": "5,7"},
        {"CUDA_VISIBLE_DEVICES": ""},
    ]
    slots.give_back(second)
    assert slots.take(TWO_GPUS).devices == ("5", "7")


def test_a_host_without_gpus_sets_no_devices() -> None:
    slots = Slots(2, ())
    assert slots.variables(slots.take(CPU)) == {}


def test_a_parallel_stage_takes_its_workers_as_cores_and_stages_stay_within_jobs() -> None:
    slots = Slots(3, ("0",), cores=16)
    slots.take(stage_needs(parse_stage_name("CPU-Generic-1"), 7))
    assert slots.fits(stage_needs(parse_stage_name("CPU-Generic-2"), 7))
    slots.take(stage_needs(parse_stage_name("CPU-Generic-2"), 7))
    assert not slots.fits(stage_needs(parse_stage_name("CPU-Generic-Post-Merge-1"), 7))  # 21 cores > 16
    assert slots.fits(stage_needs(parse_stage_name("DGX_H100-PyTorch-1")))  # 15 cores: the third stage
    slots.take(stage_needs(parse_stage_name("DGX_H100-PyTorch-1")))
    assert not slots.fits(CPU)  # a fourth stage: more than --jobs 3, though a core is free


def test_a_stage_never_takes_more_than_the_host() -> None:
    slots = Slots(1, (), cores=4)
    assert slots.take(StageNeeds(cores=64, gpus=0, alone=False)).cores == 4


@pytest.mark.parametrize(
    ("host", "jobs", "parallel", "others", "cores"),
    [
        (HostCapacity(16, 128 * 1024, ("0",)), 1, 2, 3, 16),  # one stage at a time: the whole host
        (HostCapacity(16, 128 * 1024, ("0",)), 16, 2, 3, 6),  # (16 - 3) // 2
        (HostCapacity(16, 8 * 1024, ()), 1, 1, 0, 4),  # memory holds 4 processes
        (HostCapacity(2, 16 * 1024, ()), 2, 2, 2, 1),  # the 2-core box: a core each, as before
        (HostCapacity(16, 128 * 1024, ()), 4, 2, 9, 7),  # --jobs 4 leaves room for 2 others: (16 - 2) // 2
        (HostCapacity(16, 128 * 1024, ()), 16, 0, 3, 16),  # no parallel stage: unused
    ],
    ids=["serial", "side-by-side", "memory", "two-cores", "jobs-bound-others", "no-parallel-stage"],
)
def test_stage_cores(host: HostCapacity, jobs: int, parallel: int, others: int, cores: int) -> None:
    assert stage_cores(host, jobs=jobs, parallel=parallel, others=others) == cores


def test_the_cores_a_run_gives_its_parallel_stages_count_only_stages_that_run_here_and_not_alone() -> None:
    names = [parse_stage_name(name) for name in (
        "CPU-Generic-1", "CPU-Generic-2", "CPU-Generic-PerfSanity-1", "CPU-Build_Docs", "A10-PyTorch-1",
        "DGX_H100-PyTorch-1",
    )]  # fmt: skip
    cores = run_stage_cores(
        HostCapacity(16, None, ("0",)), jobs=16, stages=names, parallel_families={"CPU-Generic"},
        runs_here=lambda name: name.gpu != "A10",
    )  # fmt: skip
    assert cores == (16 - 2) // 2  # the docs and the H100 stage beside; the perf stage alone; no A10 here


def test_records_wait_for_the_stages_before_them() -> None:
    written: list[str] = []
    order = CatalogOrder(["a", "b", "c", "d"])
    order.add("c", lambda: written.append("c"))
    order.add("b", lambda: written.append("b"))
    assert written == []
    order.add("a", lambda: written.append("a"))
    assert written == ["a", "b", "c"]
    order.add("x", lambda: written.append("x"))  # not among the stages: written at once
    assert written == ["a", "b", "c", "x"]


def test_what_waits_at_the_end_is_written_in_order() -> None:
    written: list[str] = []
    order = CatalogOrder(["a", "b", "c"])
    order.add("c", lambda: written.append("c"))
    order.add("b", lambda: written.append("b"))
    order.flush()
    assert written == ["b", "c"]
