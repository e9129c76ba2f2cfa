"""Time per step: compute timed on this machine at real small shapes, communication from the
probe's links (latency and bandwidth per link class), the pipeline's bubble.

Compute is the model's (or each pipeline stage's) forward and backward timed at two microbatch
sizes and fitted as ``fixed + per_sample × b``, with the threads one rank of the layout gets; the
optimizer's step is timed apart (it does not grow with the batch). Communication is assumed not
to overlap compute (exposed in full): a prediction, labelled so.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..modelshapes import cut, loss_of, pieces, sample_input
from .intake import AdviseError

REPEATS = 3


@dataclass(frozen=True)
class Compute:
    fixed: float  # seconds of a forward+backward that do not grow with the batch
    per_sample: float
    optimizer: float  # seconds of the optimizer's step

    def seconds(self, samples: int) -> float:
        return self.fixed + self.per_sample * samples


def _median_seconds(run: Callable[[], Any]) -> float:
    run()  # warm up
    times = []
    for _ in range(REPEATS):
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


@functools.lru_cache(maxsize=32)
def stage_compute(
    factory: Callable[[], Any], parts: int, seq: int | None, threads: int, sizes: tuple[int, int]
) -> tuple[Compute, ...]:
    """Each of ``parts`` stages' step timed for real (the whole model when 1)."""
    import torch

    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = factory()
        layers = list(model) if parts > 1 else [model]
        counts = [sum(p.numel() for p in layer.parameters()) for layer in layers]
        stages = [torch.nn.Sequential(*layers[a:b]) for a, b in pieces(cut(counts, parts))]
        out = []
        inputs = {b: sample_input(model, b, seq) for b in sizes}
        for stage in stages:
            opt = torch.optim.AdamW(stage.parameters(), lr=1e-3, foreach=False)
            timed = {}
            for b, x in inputs.items():
                timed[b] = _median_seconds(functools.partial(_forward_backward, stage, x))
                with torch.no_grad():
                    y = stage(x)
                inputs[b] = y.detach().requires_grad_(True) if y.is_floating_point() else y
            b1, b2 = sizes
            slope = max(0.0, (timed[b2] - timed[b1]) / (b2 - b1))
            out.append(Compute(max(0.0, timed[b1] - slope * b1), slope, _median_seconds(opt.step)))
        return tuple(out)
    finally:
        torch.set_num_threads(was)


def _forward_backward(stage: Any, x: Any) -> None:
    loss_of(stage(x)).backward()


def rank_threads(procs_per_node: int) -> tuple[int, float]:
    """The threads a local rank gets (as the worker sets OMP_NUM_THREADS) and how oversubscribed
    the cores are (ranks beyond the cores share them)."""
    cores = os.cpu_count() or 1
    return max(1, cores // procs_per_node), max(1.0, procs_per_node / cores)


@dataclass(frozen=True)
class Links:
    """Latency (s) and bandwidth (bytes/s) per link class, fitted from a probe."""

    latency: dict[str, float]
    bandwidth: dict[str, float]
    probe_run: str

    def klass(self, spans_nodes: bool) -> str:
        want = "inter" if spans_nodes else "intra"
        return want if want in self.latency else next(iter(self.latency))

    def allreduce(self, nbytes: float, n: int, spans_nodes: bool) -> float:
        if n < 2:
            return 0.0
        k = self.klass(spans_nodes)
        return 2 * (n - 1) / n * nbytes / self.bandwidth[k] + 2 * (n - 1) * self.latency[k]

    def gather(self, nbytes: float, n: int, spans_nodes: bool, pieces_: int) -> float:
        """One all-gather or reduce-scatter of ``nbytes`` in total, in ``pieces_`` calls."""
        if n < 2:
            return 0.0
        k = self.klass(spans_nodes)
        return (n - 1) / n * nbytes / self.bandwidth[k] + pieces_ * (n - 1) * self.latency[k]

    def p2p(self, nbytes: float, spans_nodes: bool) -> float:
        k = self.klass(spans_nodes)
        return self.latency[k] + nbytes / self.bandwidth[k]


def fit_links(probe: dict[str, Any]) -> Links:
    """Latency and bandwidth per link class: the medians of the probe's pairs of that class."""
    latency: dict[str, float] = {}
    bandwidth: dict[str, float] = {}
    for link in ("intra", "inter"):
        pairs = [p for p in probe.get("pairs", []) if p.get("link") == link]
        if pairs:
            latency[link] = statistics.median(p["latency_us"] for p in pairs) * 1e-6
            bandwidth[link] = statistics.median(p["bandwidth_gbs"] for p in pairs) * 1e9
    if not latency:
        raise AdviseError(f"probe {probe.get('run_id', '')} holds no pairs to fit links from")
    return Links(latency, bandwidth, str(probe.get("run_id", "")))


def gemm_flops(threads: int) -> float:
    """This machine's float32 matrix-multiply rate (FLOP/s) with ``threads`` threads."""
    import torch

    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a = torch.randn(512, 512)
        return 2 * 512**3 / _median_seconds(lambda: a @ a)
    finally:
        torch.set_num_threads(was)
