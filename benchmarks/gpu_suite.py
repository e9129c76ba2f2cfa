"""The GPU suite's models and real training steps (``bench_advise_gpu.py``): GPT-like
transformers (and one with a large temporary) built in their dtype, the points and layouts each
device runs, and a training step measured on the device (peak memory and median times)."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DTYPES = {"fp32": "float32", "bf16": "bfloat16"}


@dataclass(frozen=True)
class Point:
    model: str  # "gpt", or "temp": a gpt whose last block is an outer product (a big temporary)
    width: int
    layers: int
    heads: int
    vocab: int
    dtype: str
    micro: int
    seq: int

    @property
    def name(self) -> str:
        return f"{self.model} d{self.width} L{self.layers} {self.dtype} b{self.micro} s{self.seq}"


def _p(model: str, w: int, n: int, h: int, v: int, dtype: str, b: int, s: int) -> Point:
    return Point(model, w, n, h, v, dtype, b, s)


POINTS = {  # part A's points; part B's (point, world sizes)
    "cuda": [
        _p("gpt", 512, 4, 8, 8192, "fp32", 8, 512),
        _p("gpt", 512, 4, 8, 8192, "bf16", 8, 1024),
        _p("gpt", 1024, 8, 16, 32000, "bf16", 4, 1024),
        _p("gpt", 1024, 8, 16, 32000, "bf16", 8, 1024),
        _p("gpt", 1024, 8, 16, 32000, "fp32", 4, 1024),
        _p("gpt", 2048, 8, 16, 32000, "bf16", 4, 2048),
        _p("temp", 512, 2, 8, 8192, "fp32", 8, 1024),
        _p("temp", 512, 2, 8, 8192, "bf16", 8, 2048),
    ],
    "cpu": [
        _p("gpt", 128, 2, 4, 2000, "fp32", 4, 64),
        _p("gpt", 128, 2, 4, 2000, "fp32", 8, 128),
        _p("gpt", 256, 4, 8, 4000, "fp32", 4, 64),
        _p("gpt", 256, 4, 8, 4000, "bf16", 4, 64),
        _p("temp", 128, 1, 4, 2000, "fp32", 4, 64),
        _p("temp", 128, 1, 4, 2000, "fp32", 8, 128),
    ],
    "quick": [
        _p("gpt", 64, 2, 4, 512, "fp32", 4, 32),
        _p("gpt", 64, 2, 4, 512, "fp32", 8, 64),
        _p("gpt", 64, 2, 4, 512, "bf16", 4, 32),
        _p("gpt", 128, 2, 4, 1000, "fp32", 4, 32),
        _p("temp", 64, 1, 4, 512, "fp32", 4, 32),
        _p("temp", 64, 1, 4, 512, "fp32", 8, 32),
    ],
}
LAYOUTS = {  # the first of each: few activations beside the units (FSDP's peak mid-backward)
    "cuda": [(_p("gpt", 512, 2, 8, 8192, "fp32", 1, 256), (8,)),
             (_p("gpt", 1024, 8, 16, 32000, "bf16", 4, 1024), (8, 64)),
             (_p("gpt", 1024, 8, 16, 32000, "fp32", 4, 1024), (8,))],
    "cpu": [(_p("gpt", 128, 2, 4, 512, "fp32", 2, 32), (8,)),
            (_p("gpt", 256, 4, 8, 4000, "fp32", 4, 64), (8, 64))],
    "quick": [(_p("gpt", 64, 2, 4, 512, "fp32", 2, 16), (8,)),
              (_p("gpt", 128, 2, 4, 1000, "fp32", 4, 32), (8, 64))],
}  # fmt: skip


def _outer(x: Any) -> Any:
    return (x.unsqueeze(-1) * x.unsqueeze(-2)).sum(-1)


_FACTORIES: dict[Point, Callable[[], Any]] = {}


def factory_of(p: Point) -> Callable[[], Any]:
    """One zero-argument factory per model (the advisor caches its traces and timings by it)."""
    key = Point(p.model, p.width, p.layers, p.heads, p.vocab, p.dtype, 0, 0)
    if key not in _FACTORIES:

        def build() -> Any:
            return _build(key)

        build.__name__ = build.__qualname__ = f"{p.model}_d{p.width}_L{p.layers}_{p.dtype}"
        _FACTORIES[key] = build
    return _FACTORIES[key]


def _outer_block(width: int, dtype: Any) -> Any:
    """Down to r = min(128, width / 2), the outer product of each token's r values with
    themselves summed over one side (a (b, s, r, r) temporary in forward and in backward), back
    up."""
    import torch

    rank = min(128, width // 2)

    class OuterProduct(torch.nn.Module):
        def forward(self, x: Any) -> Any:
            return _outer(x)

    return torch.nn.Sequential(
        torch.nn.Linear(width, rank, dtype=dtype), OuterProduct(),
        torch.nn.Linear(rank, width, dtype=dtype),
    )  # fmt: skip


def _build(p: Point) -> Any:
    """The model in its dtype as built (``dtype=``: a module built on the advisor's fake tensors
    cannot be converted with ``.to(dtype)`` in torch 2.13, whose ``_apply`` swaps fake tensors)."""
    import torch

    dtype = getattr(torch, DTYPES[p.dtype])
    blocks = [
        torch.nn.TransformerEncoderLayer(p.width, p.heads, 4 * p.width, dropout=0.0,
                                         activation="gelu", batch_first=True, norm_first=True,
                                         dtype=dtype)
        for _ in range(p.layers)
    ]  # fmt: skip
    if p.model == "temp":
        blocks.append(_outer_block(p.width, dtype))
    return torch.nn.Sequential(
        torch.nn.Embedding(p.vocab, p.width, dtype=dtype),
        *blocks,
        torch.nn.LayerNorm(p.width, dtype=dtype),
        torch.nn.Linear(p.width, p.vocab, bias=False, dtype=dtype),
    )


def _fresh(device: str) -> None:
    """Drop what the last point left: its tensors, the allocator's cache, cuBLAS's workspaces."""
    import torch

    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


MARK = 777_777  # bytes of a marker allocation made just before the steps (CPU)


def _built(f: Callable[[], Any], p: Point, device: str, wrap: Callable[[Any], Any] | None) -> Any:
    import torch

    from jupyter_distributed.modelshapes import sample_input
    from jupyter_distributed.worker.measure import make_optimizer

    torch.manual_seed(0)
    with torch.device(device):
        model = f()
    model = wrap(model) if wrap is not None else model
    x = sample_input(model, p.micro, p.seq).to(device)
    return model, make_optimizer("adamw", model.parameters()), x


def _step(model: Any, opt: Any, x: Any) -> None:
    from jupyter_distributed.modelshapes import loss_of

    opt.zero_grad(set_to_none=True)
    loss_of(model(x)).backward()


def train(
    f: Callable[[], Any],
    p: Point,
    device: str,
    repeats: int,
    wrap: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """Real training steps of ``f()`` (wrapped by ``wrap``) at the point's shape on ``device``:
    the median forward+backward and AdamW step seconds after 3 warm-up steps, and the peak
    bytes of the steps (CUDA: ``max_memory_allocated`` after the model is built, and the cuBLAS
    workspace in it; CPU: live tensor bytes, the model and its wrapper's buffers included)."""
    import torch

    _fresh(device)
    model, opt, x = _built(f, p, device, wrap)
    warm, fb, st = 3, [], []
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        events = []
        for i in range(warm + repeats):
            e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
            e[0].record()
            _step(model, opt, x)
            e[1].record()
            opt.step()
            e[2].record()
            if i >= warm:
                events.append(e)
        torch.cuda.synchronize()
        fb = [a.elapsed_time(b) / 1e3 for a, b, _ in events]
        st = [b.elapsed_time(c) / 1e3 for _, b, c in events]
        peak, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        held = torch.cuda.memory_allocated()
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()
        workspace = held - torch.cuda.memory_allocated()
    else:
        for i in range(warm + repeats):
            began = time.perf_counter()
            _step(model, opt, x)
            middle = time.perf_counter()
            opt.step()
            if i >= warm:
                fb.append(middle - began)
                st.append(time.perf_counter() - middle)
        del model, opt, x
        peak, reserved, workspace = _cpu_peak(f, p, wrap), 0, 0
    return {
        "peak_bytes": peak, "reserved_bytes": reserved, "workspace_bytes": workspace,
        "fwd_bwd_s": statistics.median(fb), "optimizer_s": statistics.median(st),
    }  # fmt: skip


def _cpu_peak(f: Callable[[], Any], p: Point, wrap: Callable[[Any], Any] | None) -> int:
    """The most live tensor bytes during 2 steps above what was live before the model was
    built (torch's profiler, every thread's allocations counted)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from jupyter_distributed.worker.measure import allocations, every_thread_counted

    gc.collect()
    with (
        every_thread_counted(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        model, opt, x = _built(f, p, "cpu", wrap)
        mark = torch.empty(MARK, dtype=torch.uint8)  # the steps begin
        del mark
        for _ in range(2):
            _step(model, opt, x)
            opt.step()
        del model, opt, x
    events = allocations(prof)
    _, size, held, _, _ = events[0]
    start = held - size
    marks = [i for i, e in enumerate(events) if e[1] == MARK]
    after = events[marks[0] + 2 :] if marks else events
    return max(0, max(e[2] for e in after) - start)


def shard(model: Any) -> Any:
    """FSDP2 as ``shard_model`` wraps a model: each child with parameters, then the root."""
    from torch.distributed.fsdp import fully_shard

    for child in model.children():
        if any(True for _ in child.parameters()):
            fully_shard(child)
    fully_shard(model)
    return model


def with_ddp(model: Any) -> Any:
    """DDP with a no-op communication hook (the fake group returns no result for the reducer)."""
    from torch.distributed.algorithms.ddp_comm_hooks.debugging_hooks import noop_hook
    from torch.nn.parallel import DistributedDataParallel

    wrapped = DistributedDataParallel(model)
    wrapped.register_comm_hook(None, noop_hook)
    return wrapped
