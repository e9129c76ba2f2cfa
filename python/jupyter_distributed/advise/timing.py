"""Compute per step, timed on this machine at the layout's real microbatch shape, with the
threads one rank of the layout gets.

Each pipeline stage (the whole model when there is none) runs forward and backward at its
microbatch, and the optimizer's step apart; the median of a few runs after a warm-up (the ranks'
step is measured as a median too: on a shared machine the fastest run was 2-3x below what a
rank's typical step gets). Where a rank computes on one thread, the runs are timed in the
process's CPU seconds, not wall seconds: a load spike while ``advise`` times (other processes
on the cores) then no longer lands in every row it predicts (at load 77 one spike had put every
pipeline row 3-9x over); what the ranks' share of the cores is when they run is measured by
``--verify`` (the plain block timed on every rank) and carried by calibration. Timed at
the real shape, a step bound by launching many small operations is timed as it is (a block
timed at a toy size and scaled up misses that). What the stage holds (its parameter tensors, the
bytes of its output) comes with it, for the communication it causes.
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

REPEATS = 5
CPU_REPEATS = 3  # CPU seconds move far less with the load than wall seconds
BUDGET_S = 0.2  # one run only for a stage slower than this


@dataclass(frozen=True)
class Compute:
    """One stage at one microbatch size, measured here."""

    fwd_bwd: float  # seconds of forward and backward
    optimizer: float  # seconds of the optimizer's step
    tensors: tuple[int, ...]  # bytes of each parameter tensor
    boundary: int  # bytes of the stage's output (what it sends on)

    def scaled(self, factor: float) -> Compute:
        return Compute(self.fwd_bwd * factor, self.optimizer * factor, self.tensors, self.boundary)


def typical_seconds(run: Callable[[], Any], cpu: bool = False) -> float:
    """The median of a few runs after a warm-up: what a step typically takes on this machine,
    as the ranks' measured step (a median) does. ``cpu``: in this process's CPU seconds (its
    threads' work, not the time it waited for a core); for work on one thread."""
    clock = time.process_time if cpu else time.perf_counter
    began = clock()
    run()  # warm up
    once = clock() - began
    times = []
    for _ in range((CPU_REPEATS if cpu else REPEATS) if once < BUDGET_S else 1):
        began = clock()
        run()
        times.append(clock() - began)
    return statistics.median(times)


@functools.lru_cache(maxsize=128)
def stage_compute(
    factory: Callable[[], Any], parts: int, seq: int | None, threads: int, micro: int
) -> tuple[Compute, ...]:
    """Each of ``parts`` stages' forward+backward and optimizer step at ``micro`` samples,
    timed for real with ``threads`` threads (the whole model when ``parts`` is 1)."""
    import torch

    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(0)
        model = factory()
        layers = list(model) if parts > 1 else [model]
        counts = [sum(p.numel() for p in layer.parameters()) for layer in layers]
        stages = [torch.nn.Sequential(*layers[a:b]) for a, b in pieces(cut(counts, parts))]
        x = sample_input(model, micro, seq)
        out = []
        for stage in stages:
            opt = torch.optim.AdamW(stage.parameters(), lr=1e-3, foreach=False)
            run = functools.partial(_forward_backward, stage, x)
            seconds = typical_seconds(run, cpu=threads == 1)
            with torch.no_grad():
                y = stage(x)
            tensors = tuple(p.numel() * p.element_size() for p in stage.parameters())
            out.append(
                Compute(
                    seconds,
                    typical_seconds(opt.step, cpu=threads == 1),
                    tensors,
                    y.numel() * y.element_size(),
                )
            )
            x = y.detach().requires_grad_(True) if y.is_floating_point() else y
        return tuple(out)
    finally:
        torch.set_num_threads(was)


def _forward_backward(stage: Any, x: Any) -> None:
    stage.zero_grad(set_to_none=True)
    loss_of(stage(x)).backward()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # (not on Linux)
        return os.cpu_count() or 1


def rank_threads(procs_per_node: int) -> tuple[int, float]:
    """The threads a local rank gets (as the worker sets OMP_NUM_THREADS) and how oversubscribed
    the cores are (ranks beyond the cores share them). The cores are the ones this process may
    run on (its affinity, which the ranks it starts inherit), not every core of the machine."""
    cores = _cores()
    return max(1, cores // procs_per_node), max(1.0, procs_per_node / cores)


@functools.lru_cache(maxsize=8)
def gemm_flops(threads: int) -> float:
    """This machine's float32 matrix-multiply rate (FLOP/s) with ``threads`` threads."""
    import torch

    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a = torch.randn(512, 512)
        return 2 * 512**3 / typical_seconds(lambda: a @ a, cpu=threads == 1)
    finally:
        torch.set_num_threads(was)
