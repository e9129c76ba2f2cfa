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

Where this process has a GPU (the ranks then run on theirs), the stage runs on it: the model and
its batch moved there, each run's time read after ``torch.cuda.synchronize`` (the kernels are
queued, not done, when the Python call returns), in wall seconds.
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


def typical_seconds(
    run: Callable[[], Any], cpu: bool = False, sync: Callable[[], Any] | None = None
) -> float:
    """The median of a few runs after a warm-up: what a step typically takes on this machine,
    as the ranks' measured step (a median) does. ``cpu``: in this process's CPU seconds (its
    threads' work, not the time it waited for a core); for work on one thread. ``sync``: waits
    for the device's queued work (``torch.cuda.synchronize``), before each run's clock starts
    and before it is read."""
    clock = time.process_time if cpu else time.perf_counter

    def timed() -> float:
        if sync is not None:
            sync()
        began = clock()
        run()
        if sync is not None:
            sync()
        return clock() - began

    once = timed()  # warm up
    times = [timed() for _ in range((CPU_REPEATS if cpu else REPEATS) if once < BUDGET_S else 1)]
    return statistics.median(times)


def step_seconds(
    fwd_bwd: Callable[[], Any], step: Callable[[], Any], cpu: bool, device: str
) -> tuple[float, float]:
    """Typical seconds of forward+backward and of the optimizer's step. On CPU each is timed
    apart. On a GPU the optimizer's step is what it adds to a whole step (forward, backward and
    step timed together, less forward+backward): its kernels are queued while the backward's
    still run, so a step launched one small kernel at a time (``foreach=False``: about ten a
    parameter) is hidden behind a long backward and exposed after a short one; timed alone, it
    was the launches' CPU time, 1.8-5.7x the step's share on an H200."""
    sync = device_sync(device)
    fb = typical_seconds(fwd_bwd, cpu=cpu, sync=sync)
    if sync is None:
        return fb, typical_seconds(step, cpu=cpu)

    def whole() -> None:
        fwd_bwd()
        step()

    return fb, max(0.0, typical_seconds(whole, sync=sync) - fb)


@functools.cache
def compute_device() -> str:
    """Where the advisor times compute: ``"cuda"`` where this process has a GPU, else ``"cpu"``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@functools.cache
def device_workspace_bytes() -> int:
    """Bytes a GPU rank's math libraries keep from its first matrix product on: the cuBLAS and
    cuBLASLt workspaces, which torch's allocator counts (32 MiB a handle and stream on an H100
    by default); measured here by clearing them and making them again as a training step does:
    products in forward and in backward (fp32 and bf16, with and without a bias). The backward
    runs on autograd's own thread, whose cuBLAS handle has a workspace of its own: a forward
    alone measured 33 MiB of the 65 MiB an H200's step held. 0 on CPU, or where it cannot be
    measured."""
    if compute_device() != "cuda":
        return 0
    import torch

    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is None:
        return 0
    torch.cuda.synchronize()
    clear()
    before = torch.cuda.memory_allocated()
    for dtype in (torch.float32, torch.bfloat16):
        w = torch.ones(64, 64, device="cuda", dtype=dtype, requires_grad=True)
        a = torch.ones(64, 64, device="cuda", dtype=dtype)
        torch.nn.functional.linear(a, w).sum().backward()  # type: ignore[no-untyped-call]
        torch.nn.functional.linear(a, w, w[0]).sum().backward()  # type: ignore[no-untyped-call]
    del a, w
    torch.cuda.synchronize()
    return max(0, torch.cuda.memory_allocated() - before)


def device_sync(device: str) -> Callable[[], Any] | None:
    """What waits for ``device``'s queued work (None: work on it is done when a call returns)."""
    import torch

    return torch.cuda.synchronize if device == "cuda" else None


@functools.lru_cache(maxsize=128)
def stage_compute(
    factory: Callable[[], Any], parts: int, seq: int | None, threads: int, micro: int
) -> tuple[Compute, ...]:
    """Each of ``parts`` stages' forward+backward and optimizer step at ``micro`` samples,
    timed for real with ``threads`` threads (the whole model when ``parts`` is 1)."""
    import torch

    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    device = compute_device()
    cpu = threads == 1 and device == "cpu"
    try:
        torch.manual_seed(0)
        with torch.device(device):  # built there (a large model's CPU init is slow)
            model = factory().to(device)
        layers = list(model) if parts > 1 else [model]
        counts = [sum(p.numel() for p in layer.parameters()) for layer in layers]
        stages = [torch.nn.Sequential(*layers[a:b]) for a, b in pieces(cut(counts, parts))]
        x = sample_input(model, micro, seq)
        x = x.to(device) if x is not None else x
        out = []
        for stage in stages:
            opt = torch.optim.AdamW(stage.parameters(), lr=1e-3, foreach=False)
            run = functools.partial(_forward_backward, stage, x)
            seconds, stepping = step_seconds(run, opt.step, cpu, device)
            with torch.no_grad():
                y = stage(x)
            tensors = tuple(p.numel() * p.element_size() for p in stage.parameters())
            out.append(Compute(seconds, stepping, tensors, y.numel() * y.element_size()))
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
    """The threads a local rank gets (as the worker sets OMP_NUM_THREADS: all the cores for a
    rank alone on its machine, else one, as under torchrun) and how oversubscribed the cores are
    (ranks beyond the cores share them). The cores are the ones this process may run on (its
    affinity, which the ranks it starts inherit), not every core of the machine."""
    cores = _cores()
    return (cores if procs_per_node == 1 else 1), max(1.0, procs_per_node / cores)


GEMM_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@functools.lru_cache(maxsize=8)
def gemm_flops(threads: int, dtype: str = "fp32") -> float:
    """This machine's matrix-multiply rate (FLOP/s): on a GPU, 10 products of 4096² matrices in
    ``dtype`` (one is a few hundred microseconds there: launch-bound alone); on CPU, a 512²
    float32 product with ``threads`` threads (``dtype`` is not used: the CPU rate the suite's
    models run at)."""
    import torch

    device = compute_device()
    if device != "cpu":
        n, times = 4096, 10
        a = torch.randn(n, n, device=device, dtype=getattr(torch, GEMM_DTYPES[dtype]))

        def products() -> None:
            for _ in range(times):
                a @ a

        return times * 2 * n**3 / typical_seconds(products, sync=device_sync(device))
    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a = torch.randn(512, 512)
        return 2 * 512**3 / typical_seconds(lambda: a @ a, cpu=threads == 1)
    finally:
        torch.set_num_threads(was)
