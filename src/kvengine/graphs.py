"""Capture and replay the decode step per batch size from shared static input buffers.

All graphs read the first `batch_size` rows of the same static buffers and share one memory pool
(captured largest first, so smaller graphs reuse the larger ones' memory). Without CUDA graphs
(CPU, or graphs off) `replay` simply calls the step on those rows: same staging, same padding path.
Capture and replay run with the buffers' device current: a graph captured while another GPU is current
records nothing (one engine replica per GPU depends on this).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch

from kvengine.model import DecodeInputs

StepFn = Callable[[DecodeInputs], tuple[torch.Tensor, torch.Tensor]]


class GraphRunner:
    """One decode step per captured batch size; `use_cuda_graphs=False` replays by calling the step."""

    def __init__(self, step: StepFn, static: DecodeInputs, *, use_cuda_graphs: bool) -> None:
        self.step = step
        self.static = static
        self.use_cuda_graphs = use_cuda_graphs
        self._graphs: dict[int, torch.cuda.CUDAGraph] = {}
        self._outputs: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self._sizes: set[int] = set()
        self.device = static.token_ids.device
        self._mempool = torch.cuda.graph_pool_handle() if use_cuda_graphs else None
        self._stream: torch.cuda.Stream | None = None

    @contextlib.contextmanager
    def _on_device(self) -> Iterator[None]:
        """Make the buffers' GPU current (a no-op on CPU)."""
        if self.device.type != "cuda":
            yield
            return
        with torch.cuda.device(self.device):
            yield

    @property
    def captured_sizes(self) -> tuple[int, ...]:
        return tuple(sorted(self._sizes))

    def capture(self, batch_size: int) -> None:
        """Record the step for the first `batch_size` static rows (they must hold valid dummy inputs)."""
        inputs = self.static.rows(batch_size)
        if self.use_cuda_graphs:
            with self._on_device():
                self._capture(batch_size, inputs)
        else:
            self.step(inputs)
        self._sizes.add(batch_size)

    def _capture(self, batch_size: int, inputs: DecodeInputs) -> None:
        # One capture stream per runner, on its own GPU: torch.cuda.graph's default capture stream is
        # created once per process, on whichever GPU captured first, and cannot capture on another.
        # The warm-up runs on the same stream so that per-stream library state (the cuBLAS workspace)
        # exists before capture, when allocating it is not allowed.
        if self._stream is None:
            self._stream = torch.cuda.Stream()
        self._stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self._stream):
            self.step(inputs)
        torch.cuda.current_stream().wait_stream(self._stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self._mempool, stream=self._stream):
            self._outputs[batch_size] = self.step(inputs)
        self._graphs[batch_size] = graph

    def replay(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        if batch_size not in self._sizes:
            raise KeyError(f"no decode step captured for batch size {batch_size}")
        if not self.use_cuda_graphs:
            return self.step(self.static.rows(batch_size))
        with self._on_device():
            self._graphs[batch_size].replay()
        return self._outputs[batch_size]
