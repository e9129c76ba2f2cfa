"""The predicted memory per rank of FSDP, DDP and the pipeline (GPipe, 1F1B) against gloo
ranks, run after run, and what is live at the peak (issue 25). The same models as
``bench_advise.py``; each run is a fresh group of local gloo processes that builds the model,
wraps it as the layout's launch line does (``shard_model``, ``wrap_ddp`` or the ``pipeline``
helper) and runs 2 AdamW steps under torch's profiler with the CPU allocator counting every
thread, as ``%distributed advise --verify`` measures.

Run: ``python benchmarks/bench_fsdp_memory.py [--runs 3] [--why] mlp:4:8 tfm:4:8:1f1b-2-4 ...``
(``--time``: FSDP's step time with the launch line's collectives against FSDP2's own, in
alternating blocks of steps on the same ranks, instead of memory)
(``model:ranks:global_batch[:layout]``, layout ``fsdp`` (the default), ``ddp``, or
``gpipe-P-M`` / ``1f1b-P-M``: P stages, M microbatches, the rest data parallel). Prints the
prediction, each run's peak (the largest rank's live tensor bytes) and the error; ``--why``:
the live tensors at the largest rank's peak by the op that made them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_advise import MODELS, SEQ
from common import use_checkout


def _free_port() -> int:
    """A port free now (two copies of this script at once once took the same fixed port)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _models() -> dict[str, Any]:
    space: dict[str, Any] = {}
    exec(MODELS, space)  # noqa: S102 (the suite's own model definitions)
    return space


def _live_at_peak(prof: Any) -> list[tuple[int, int, str]]:
    """(bytes, tensors, where) live at the peak, largest first. A free on a thread the profiler
    does not follow is seen only when its address is allocated again, so a buffer gloo freed on
    its own thread may still be listed."""
    from jupyter_distributed.worker.measure import allocations

    live: dict[int, tuple[int, str]] = {}
    peak = -1
    snap: dict[int, tuple[int, str]] = {}
    for _, size, held, ptr, stack in allocations(prof):
        if size > 0:
            live[ptr] = (size, " > ".join(stack[-3:]))
        else:
            live.pop(ptr, None)
        if held > peak:
            peak, snap = held, dict(live)
    by: dict[str, tuple[int, int]] = {}
    for size, where in snap.values():
        b, n = by.get(where, (0, 0))
        by[where] = (b + size, n + 1)
    return sorted(((b, n, w) for w, (b, n) in by.items()), reverse=True)


def _layout(spec: str, world: int) -> tuple[str, int, int, bool]:
    """(strategy, stages, microbatches, 1F1B) of a scenario's layout field."""
    if spec in ("fsdp", "ddp"):
        return spec, 1, 1, False
    kind, p, m = spec.split("-")
    if kind not in ("gpipe", "1f1b") or world % int(p):
        raise SystemExit(f"bad layout {spec!r}: fsdp, ddp, gpipe-P-M or 1f1b-P-M (P divides ranks)")
    # the pipeline helper runs GPipe when 1F1B has fewer microbatches than stages
    return "model-parallel", int(p), int(m), kind == "1f1b" and int(m) >= int(p)


def _wrapped(layout: str, world: int, model: Any) -> Any:
    """``model`` as the layout's launch line wraps it on this rank."""
    from jupyter_distributed.layout import Layout, ModelParallel, Pipeline
    from jupyter_distributed.modelshapes import loss_of
    from jupyter_distributed.worker.pipeline import PipelineRunner, build_mesh
    from jupyter_distributed.worker.torch_helpers import shard_model, wrap_ddp

    strategy, pp, m, one_f_one_b = _layout(layout, world)
    if strategy == "fsdp":
        return shard_model(model)
    if strategy == "ddp":
        return wrap_ddp(model)
    kind = Pipeline.INTERLEAVED if one_f_one_b else Pipeline.SIMPLE
    mp = ModelParallel(partitions=pp, microbatches=m, pipeline=kind)
    spec = Layout(procs_per_node=world, strategy="model-parallel", model_parallel=mp)
    import torch

    device = torch.device("cpu")
    return PipelineRunner(model, build_mesh(spec, device), mp, lambda o, _t: loss_of(o), device)


def _rank(rank: int, world: int, name: str, batch: int, layout: str, port: int, out: Any) -> None:
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from jupyter_distributed.modelshapes import sample_input
    from jupyter_distributed.worker.measure import (
        _default_step,
        every_thread_counted,
        make_optimizer,
        peak_live_bytes,
    )

    _, pp, _, _ = _layout(layout, world)
    with (
        every_thread_counted(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        model = _models()[name]()
        x = sample_input(model, batch // (world // pp), SEQ[name])
        model = _wrapped(layout, world, model)
        opt = make_optimizer("adamw", model.parameters())
        for _ in range(2):
            _default_step(model, opt, x)
    out.put((rank, peak_live_bytes(prof), _live_at_peak(prof)[:14]))
    dist.destroy_process_group()


def _timed(rank: int, world: int, name: str, batch: int, port: int, out: Any) -> None:
    """Median step seconds of the launch line's FSDP (``shard_model``) and of FSDP2 with its own
    collectives, the same model and batch, in alternating blocks of 5 steps (the load moves)."""
    import statistics
    import time

    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from jupyter_distributed.modelshapes import sample_input
    from jupyter_distributed.worker.measure import _default_step, make_optimizer
    from jupyter_distributed.worker.torch_helpers import shard_model

    theirs = _models()[name]()
    for child in theirs.children():
        if any(True for _ in child.parameters()):
            fully_shard(child)
    fully_shard(theirs)
    ours = shard_model(_models()[name]())
    x = sample_input(ours, batch // world, SEQ[name])
    runs = [(m, make_optimizer("adamw", m.parameters()), []) for m in (ours, theirs)]
    for block in range(9):
        for model, opt, seconds in runs:
            for _ in range(5):
                dist.barrier()
                began = time.perf_counter()
                _default_step(model, opt, x)
                if block:  # the first block warms up
                    seconds.append(time.perf_counter() - began)
    out.put((rank, *(statistics.median(s) for _, _, s in runs)))
    dist.destroy_process_group()


def predicted(name: str, world: int, batch: int, layout: str = "fsdp") -> int:
    from jupyter_distributed.advise.intake import from_factory
    from jupyter_distributed.advise.memory import layout_memory, trace

    strategy, pp, m, one_f_one_b = _layout(layout, world)
    factory = _models()[name]
    info = from_factory(factory, SEQ[name])
    dp = world // pp
    stages = trace(factory, batch // dp // m, SEQ[name], "adamw", pp)
    got = layout_memory(stages, info.layer_params, info.parameters, strategy, dp, m, one_f_one_b, 0)
    return got.total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", help="model:ranks:global_batch")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--why", action="store_true")
    parser.add_argument("--time", action="store_true", help="FSDP step time, ours and FSDP2's")
    args = parser.parse_args()
    use_checkout(always=True)
    import torch.multiprocessing as mp

    for spec in args.scenarios:
        name, ranks, batch, *rest = spec.split(":")
        world, samples, layout = int(ranks), int(batch), (rest or ["fsdp"])[0]
        if args.time:
            for _ in range(args.runs):
                port = _free_port()
                queue = mp.get_context("spawn").SimpleQueue()
                mp.spawn(_timed, args=(world, name, samples, port, queue), nprocs=world)
                got = [queue.get()[1:] for _ in range(world)]
                ours, theirs = (1e3 * max(t) for t in zip(*got, strict=True))
                change = ours / theirs - 1
                print(f"{spec:<18} step ms: ours {ours:.2f}  FSDP2's {theirs:.2f}  {change:+.1%}")
            continue
        pred = predicted(name, world, samples, layout)
        got = []
        for _ in range(args.runs):
            port = _free_port()
            queue = mp.get_context("spawn").SimpleQueue()
            mp.spawn(_rank, args=(world, name, samples, layout, port, queue), nprocs=world)
            rows = sorted((queue.get() for _ in range(world)), key=lambda r: -r[1])
            got.append(rows[0][1])
            if args.why:
                print(f"  {spec}: rank {rows[0][0]} peaks at {rows[0][1]} B, live then:")
                for size, n, where in rows[0][2]:
                    print(f"    {size:>10} {n:>4}  {where}")
        errs = " ".join(f"{pred / g - 1:+.1%}" for g in got)
        print(f"{spec:<18} predicted {pred:>10} measured {' '.join(map(str, got))}  error {errs}")


if __name__ == "__main__":
    main()
