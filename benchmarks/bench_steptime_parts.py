"""Why the advisor's step time and the ranks' differ: each part of a step timed inside real gloo
ranks (one torch thread each, all ranks at once, as ``%%distributed`` runs them) beside what the
advisor times in its own process for the same block.

Run: ``python benchmarks/bench_steptime_parts.py MODEL MICRO [RANKS]`` (MODEL: mlp, wide, deep,
the suite's models of ``bench_advise.py``). Prints the advisor's forward+backward, optimizer and
FSDP/DDP framework times (``advise/timing.py``, ``advise/framework.py``), then per rank the median
and the fastest of 15 runs of: the plain block, the optimizer's step, the block under DDP, a whole
DDP step, an all_reduce of all gradients, one of 1 KiB, a barrier, the block under FSDP2. And the
load average before and after (the machine is shared: say it with every figure).
"""

from __future__ import annotations

import os
import socket
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))


def mlp() -> Any:
    import torch

    return torch.nn.Sequential(
        torch.nn.Embedding(512, 64),
        *[torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
          for _ in range(3)],
        torch.nn.Linear(64, 512),
    )  # fmt: skip


def wide() -> Any:
    import torch

    return torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256))  # fmt: skip


def deep() -> Any:
    import torch

    return torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh()) for _ in range(16)]
    )


MODELS: dict[str, tuple[Callable[[], Any], int | None]] = {
    "mlp": (mlp, 16), "wide": (wide, None), "deep": (deep, None)
}  # fmt: skip


def timed(run: Callable[[], Any], n: int = 15) -> tuple[float, float]:
    """Median and fastest of ``n`` runs after 2 warm-ups, in seconds."""
    run()
    run()
    seconds = [_once(run) for _ in range(n)]
    return statistics.median(seconds), min(seconds)


def _once(run: Callable[[], Any]) -> float:
    began = time.perf_counter()
    run()
    return time.perf_counter() - began


def rank(r: int, n: int, port: int, name: str, micro: int, q: Any) -> None:
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel

    from jupyter_distributed.modelshapes import loss_of, sample_input

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=r, world_size=n)
    factory, seq = MODELS[name]
    torch.manual_seed(0)
    out = {}
    model = factory()
    x = sample_input(model, micro, seq)

    def fwd_bwd(m: Any) -> None:
        m.zero_grad(set_to_none=True)
        loss_of(m(x)).backward()

    def part(label: str, run: Callable[[], Any]) -> None:
        dist.barrier()
        out[label] = timed(run)

    part("plain forward+backward", lambda: fwd_bwd(model))
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    part("optimizer step", torch.optim.AdamW(model.parameters(), foreach=False).step)
    ddp = DistributedDataParallel(factory())
    part("DDP forward+backward", lambda: fwd_bwd(ddp))
    opt = torch.optim.AdamW(ddp.parameters(), foreach=False)

    def ddp_step() -> None:
        opt.zero_grad()
        loss_of(ddp(x)).backward()
        opt.step()

    part("DDP whole step", ddp_step)
    grads = torch.zeros(sum(p.numel() for p in model.parameters()))
    part(f"all_reduce {grads.numel() * 4:,} B", lambda: dist.all_reduce(grads))
    small = torch.zeros(256)
    part("all_reduce 1 KiB", lambda: dist.all_reduce(small))
    part("barrier", dist.barrier)
    sharded = factory()
    for child in sharded.children():
        if any(True for _ in child.parameters()):
            fully_shard(child)
    fully_shard(sharded)
    part("FSDP2 forward+backward", lambda: fwd_bwd(sharded))
    q.put((r, out))
    dist.destroy_process_group()


def main() -> None:
    import torch.multiprocessing as mp

    from jupyter_distributed.advise.framework import ddp_seconds, fsdp_seconds
    from jupyter_distributed.advise.timing import stage_compute

    name, micro = sys.argv[1], int(sys.argv[2])
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    factory, seq = MODELS[name]
    print(f"{name}, microbatch {micro}, {n} ranks; load average {os.getloadavg()}")
    (alone,) = stage_compute(factory, 1, seq, 1, micro)
    fsdp = fsdp_seconds(factory, seq, 1, micro, n) or (0.0, 0.0)
    ddp = ddp_seconds(factory, seq, 1, micro) or 0.0
    print(f"advisor, one process (median of 5): forward+backward {1e3 * alone.fwd_bwd:.2f} ms, "
          f"optimizer {1e3 * alone.optimizer:.2f} ms, under DDP (1 rank) {1e3 * ddp:.2f} ms, "
          f"under FSDP2 (fake group) {1e3 * fsdp[0]:.2f} ms + optimizer "
          f"{1e3 * fsdp[1]:.2f} ms")  # fmt: skip
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=rank, args=(r, n, port, name, micro, q)) for r in range(n)]
    for p in procs:
        p.start()
    got = dict(q.get() for _ in procs)
    for p in procs:
        p.join()
    print("inside the ranks, median / fastest of 15 (ms):")
    for label in got[0]:
        cells = "  ".join(
            f"r{r} {1e3 * got[r][label][0]:7.2f} / {1e3 * got[r][label][1]:6.2f}"
            for r in sorted(got)
        )
        print(f"  {label:<28} {cells}")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
