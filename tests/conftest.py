"""Suite-wide options: `--update-goldens` rewrites golden files; `gpu` tests skip cleanly without CUDA;
hypothesis runs without its per-example deadline."""

from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, settings

# A deadline (200 ms an example) and the too-slow health check measure the machine, not the code: on a busy
# one they fail at random. No property test here is about speed. (Built on the current default, so that
# hypothesis's own "ci" profile, when $CI is set, still applies.)
settings.register_profile("ci-tool", settings(deadline=None, suppress_health_check=[HealthCheck.too_slow]))
settings.load_profile("ci-tool")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output instead of comparing against them",
    )


@functools.cache
def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if not gpu_items or _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))
