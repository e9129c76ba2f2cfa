"""``%distributed advise --verify`` (and the advisor's tests) on a rank: build the model, wrap it
as the cell's strategy does, train a few steps, and measure what the advisor predicted.

Memory is the peak of live tensor bytes by torch's own accounting (the CPU allocator's count of
bytes it holds, as the profiler's allocation events carry it, from before the model is built),
not the process's resident size; time is the median of steps run after the profiled ones (the
profiler slows a step).

The profiler records an allocation or a free only on threads it follows. gloo frees a
collective's buffers on its own worker thread when that thread drops the work last, and the
profiler misses those frees: summing the events' sizes then grew by a unit's buffers for each
missed free (measured: +132 KiB per step on 4 FSDP ranks, and the peak of 2 steps 0-62 %
high). With c10's ``caffe2_report_cpu_memory_usage`` flag on, the allocator counts frees on
every thread, and each recorded event carries that count, so the peak is read from it.
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..modelshapes import loss_of, sample_input

PROFILED_STEPS = 2


def make_optimizer(kind: str, params: Any) -> Any:
    import torch

    if kind == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=False)
    return torch.optim.AdamW(params, lr=1e-3, foreach=False)


@contextmanager
def every_thread_counted() -> Iterator[bool]:
    """Turn on c10's count of CPU allocations and frees on every thread (the profiler's own
    count follows only its threads); yields whether the flag was found."""
    import torch

    try:
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libc10.so"))
        flag = ctypes.c_bool.in_dll(lib, "FLAGS_caffe2_report_cpu_memory_usage")
    except (OSError, ValueError):  # another build of torch: the profiler's threads only
        yield False
        return
    was = flag.value
    flag.value = True
    try:
        yield True
    finally:
        flag.value = was


def allocations(prof: Any) -> list[tuple[int, int, int, int, list[str]]]:
    """The profile's allocation events in time order: (time, bytes (a free: negative), the
    allocator's count of bytes held after it, address, the ops it ran under, outermost first)."""
    from torch._C._profiler import _EventType

    found: list[tuple[int, int, int, int, list[str]]] = []

    def walk(node: Any, stack: list[str]) -> None:
        if node.tag == _EventType.Allocation:
            f = node.extra_fields
            found.append((node.start_time_ns, f.alloc_size, f.total_allocated, f.ptr, stack))
        for child in node.children:
            walk(child, [*stack, node.name])

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root, [])
    found.sort(key=lambda a: a[0])
    return found


def peak_live_bytes(prof: Any) -> int:
    """The most bytes the allocator held during the profile, above what it held at its start."""
    events = allocations(prof)
    if not events:
        return 0
    _, size, held, _, _ = events[0]
    start = held - size
    return max(0, max(held for _, _, held, _, _ in events) - start)


def measure(
    namespace: dict[str, Any],
    factory: Callable[[], Any],
    micro: int,
    seq: int | None,
    microbatches: int = 1,
    steps: int = 3,
    optimizer: str = "adamw",
    step: Callable[..., Any] | None = None,
    probe: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Train ``steps`` steps of ``micro × microbatches`` samples on this rank; the peak live
    tensor bytes and the median seconds of a step. ``step(model, optimizer, batch)``: the user's
    own step (a pipeline stage gets ``runner`` as its model), else forward, backward, step.
    ``probe``: a fixed block (the load probe) run and timed after each timed step, all ranks
    then meeting at a barrier before the next step (so no rank's step waits for another's probe):
    its median is ``probe_seconds``, what the cores gave during the steps."""
    from torch.profiler import ProfilerActivity, profile

    strategy = namespace.get("parallel", {}).get("strategy", "none")
    with (
        every_thread_counted(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        model = factory()
        batch = sample_input(model, micro * microbatches, seq)
        if strategy == "ddp":
            model = namespace["wrap_ddp"](model)
        elif strategy == "fsdp":
            model = namespace["shard_model"](model)
        elif strategy == "model-parallel":
            model = namespace["pipeline"](model, lambda out, _target: loss_of(out))
        opt = make_optimizer(optimizer, model.parameters())
        one = step or _default_step
        for _ in range(PROFILED_STEPS):
            one(model, opt, batch)
    seconds, probed = [], []
    for _ in range(steps):
        began = time.perf_counter()
        one(model, opt, batch)
        seconds.append(time.perf_counter() - began)
        if probe is not None:
            began = time.perf_counter()
            probe()
            probed.append(time.perf_counter() - began)
            _barrier()
    out = {
        "peak_bytes": peak_live_bytes(prof),
        "step_seconds": statistics.median(seconds),
        "step_seconds_all": seconds,  # each timed step's (all ranks meet between the steps)
        "samples": micro * microbatches,
    }
    if probed:
        out["probe_seconds"] = statistics.median(probed)
    return out


def plain_block(factory: Callable[[], Any], micro: int, seq: int | None) -> Callable[[], None]:
    """The plain model's forward+backward at ``micro`` samples, built and run once: the block
    whose time on a rank, against the advisor's own time of it, is the rank's share of the
    cores (calibration's compute factor)."""
    model = factory()
    x = sample_input(model, micro, seq)

    def once() -> None:
        model.zero_grad(set_to_none=True)
        loss_of(model(x)).backward()

    once()
    return once


def _barrier() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def _default_step(model: Any, opt: Any, batch: Any) -> None:
    import torch

    opt.zero_grad()
    if hasattr(model, "schedule"):  # a pipeline stage (worker.pipeline.PipelineRunner)
        target = torch.zeros(batch.shape[0]) if model.is_last else None
        model.step(batch if model.is_first else None, target)
    else:
        loss_of(model(batch)).backward()
    opt.step()
