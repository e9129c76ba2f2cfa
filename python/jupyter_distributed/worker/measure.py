"""``%distributed advise --verify`` (and the advisor's tests) on a rank: build the model, wrap it
as the cell's strategy does, train a few steps, and measure what the advisor predicted.

Memory is the peak of live tensor bytes by torch's own accounting (the profiler's allocation
events, from before the model is built), not the process's resident size; time is the median of
steps run after the profiled ones (the profiler slows a step).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from ..modelshapes import loss_of, sample_input

PROFILED_STEPS = 2


def make_optimizer(kind: str, params: Any) -> Any:
    import torch

    if kind == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=False)
    return torch.optim.AdamW(params, lr=1e-3, foreach=False)


def peak_live_bytes(prof: Any) -> int:
    """The highest sum of live tensor bytes over the profiler's allocation events."""
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for event in events:
        live += event.nbytes()
        peak = max(peak, live)
    return peak


def measure(
    namespace: dict[str, Any],
    factory: Callable[[], Any],
    micro: int,
    seq: int | None,
    microbatches: int = 1,
    steps: int = 3,
    optimizer: str = "adamw",
    step: Callable[..., Any] | None = None,
) -> dict[str, Any]:
    """Train ``steps`` steps of ``micro × microbatches`` samples on this rank; the peak live
    tensor bytes and the median seconds of a step. ``step(model, optimizer, batch)``: the user's
    own step (a pipeline stage gets ``runner`` as its model), else forward, backward, step."""
    from torch.profiler import ProfilerActivity, profile

    strategy = namespace.get("parallel", {}).get("strategy", "none")
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
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
    seconds = []
    for _ in range(steps):
        began = time.perf_counter()
        one(model, opt, batch)
        seconds.append(time.perf_counter() - began)
    return {
        "peak_bytes": peak_live_bytes(prof),
        "step_seconds": statistics.median(seconds),
        "samples": micro * microbatches,
    }


def _default_step(model: Any, opt: Any, batch: Any) -> None:
    import torch

    opt.zero_grad()
    if hasattr(model, "schedule"):  # a pipeline stage (worker.pipeline.PipelineRunner)
        target = torch.zeros(batch.shape[0]) if model.is_last else None
        model.step(batch if model.is_first else None, target)
    else:
        loss_of(model(batch)).backward()
    opt.step()
