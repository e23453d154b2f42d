"""Capture and replay the decode step per batch size from shared static input buffers.

All graphs read the first `batch_size` rows of the same static buffers and share one memory pool
(captured largest first, so smaller graphs reuse the larger ones' memory). Without CUDA graphs
(CPU, or graphs off) `replay` simply calls the step on those rows: same staging, same padding path.
"""

from __future__ import annotations

from collections.abc import Callable

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
        self._mempool = torch.cuda.graph_pool_handle() if use_cuda_graphs else None

    @property
    def captured_sizes(self) -> tuple[int, ...]:
        return tuple(sorted(self._sizes))

    def capture(self, batch_size: int) -> None:
        """Record the step for the first `batch_size` static rows (they must hold valid dummy inputs)."""
        inputs = self.static.rows(batch_size)
        if self.use_cuda_graphs:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.step(inputs)  # warm-up run: lazy library init must not happen during capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=self._mempool):
                self._outputs[batch_size] = self.step(inputs)
            self._graphs[batch_size] = graph
        else:
            self.step(inputs)
        self._sizes.add(batch_size)

    def replay(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        if batch_size not in self._sizes:
            raise KeyError(f"no decode step captured for batch size {batch_size}")
        if not self.use_cuda_graphs:
            return self.step(self.static.rows(batch_size))
        self._graphs[batch_size].replay()
        return self._outputs[batch_size]
