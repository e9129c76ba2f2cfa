"""FSDP's predicted memory per rank against gloo ranks, run after run, and what is live at the
peak (issue 25). The same models as ``bench_advise.py``; each run is a fresh group of local
gloo processes that builds the model, ``shard_model`` s it (FSDP2), and runs 2 AdamW steps
under torch's profiler, as ``%distributed advise --verify`` measures.

Run: ``python benchmarks/bench_fsdp_memory.py [--runs 3] [--why] mlp:4:8 deep:2:8 ...``
(``model:ranks:global_batch``). Prints the prediction, each run's peak (the largest rank's
live tensor bytes) and the error; ``--why``: the live tensors at the largest rank's peak by
the op that made them.
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


def _rank(rank: int, world: int, name: str, batch: int, port: int, out: Any) -> None:
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from jupyter_distributed.modelshapes import loss_of, sample_input
    from jupyter_distributed.worker.measure import (
        every_thread_counted,
        make_optimizer,
        peak_live_bytes,
    )
    from jupyter_distributed.worker.torch_helpers import shard_model

    with (
        every_thread_counted(),
        profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof,
    ):
        model = _models()[name]()
        x = sample_input(model, batch // world, SEQ[name])
        model = shard_model(model)
        opt = make_optimizer("adamw", model.parameters())
        for _ in range(2):
            opt.zero_grad()
            loss_of(model(x)).backward()
            opt.step()
    out.put((rank, peak_live_bytes(prof), _live_at_peak(prof)[:14]))
    dist.destroy_process_group()


def predicted(name: str, world: int, batch: int) -> int:
    from jupyter_distributed.advise.intake import from_factory
    from jupyter_distributed.advise.memory import layout_memory, trace

    factory = _models()[name]
    info = from_factory(factory, SEQ[name])
    (whole,) = trace(factory, batch // world, SEQ[name], "adamw", 1)
    fsdp = layout_memory((whole,), info.layer_params, info.parameters, "fsdp", world, 1, False, 0)
    return fsdp.total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+", help="model:ranks:global_batch")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--why", action="store_true")
    args = parser.parse_args()
    use_checkout(always=True)
    import torch.multiprocessing as mp

    port = 29600
    for spec in args.scenarios:
        name, ranks, batch = spec.split(":")
        world, samples = int(ranks), int(batch)
        pred = predicted(name, world, samples)
        got = []
        for _ in range(args.runs):
            port += 1
            queue = mp.get_context("spawn").SimpleQueue()
            mp.spawn(_rank, args=(world, name, samples, port, queue), nprocs=world)
            rows = sorted((queue.get() for _ in range(world)), key=lambda r: -r[1])
            got.append(rows[0][1])
            if args.why:
                print(f"  {spec}: rank {rows[0][0]} peaks at {rows[0][1]} B, live then:")
                for size, n, where in rows[0][2]:
                    print(f"    {size:>10} {n:>4}  {where}")
        errs = " ".join(f"{pred / g - 1:+.1%}" for g in got)
        print(f"{spec:<10} predicted {pred:>10} measured {' '.join(map(str, got))}  error {errs}")


if __name__ == "__main__":
    main()
