"""FSDP2's memory on one rank of torch's fake process group (real tensors, no processes) against
the advisor's prediction, over a grid of small GPT-like models (``gpu_suite.py``'s): where a
model's activations are small beside its units the peak is inside a unit's backward, which the
suite's larger points do not reach (issue 25).

Run (from the repository root): ``PYTHONPATH=python python benchmarks/bench_fsdp_fake.py
[--widths 32 64 128] [--layers 1 2] [--micro 1 2 4] [--seq 16 32] [--world 4 8] [--dtype fp32]
[--model gpt]``. Prints, per point, the measured peak of live tensor bytes (torch's profiler,
every thread counted, from the model's build on) and the prediction with NCCL's rule (no
collective buffers: what the fake group allocates too) and the advisor's CPU rule (``gloo``:
gloo's all-gather buffer while a prefetch runs, which the fake group does not allocate), each
with its error (predicted ÷ measured − 1); then a summary.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import use_checkout


def one(point: Any, world: int) -> tuple[int, int, int]:
    """(measured, predicted with NCCL's rule, predicted with gloo's) for one rank of ``world``."""
    import torch.distributed as dist
    from gpu_suite import factory_of, shard, train
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from jupyter_distributed.advise.intake import from_factory
    from jupyter_distributed.advise.memory import layout_memory, trace

    f = factory_of(point)
    info = from_factory(f, point.seq)
    stages = trace(f, point.micro, point.seq, "adamw")
    rules = [
        layout_memory(stages, info.layer_params, info.parameters, "fsdp", world, 1, False, 0.0,
                      2, rule).total
        for rule in ("nccl", "gloo")
    ]  # fmt: skip
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world)
    try:
        measured = train(f, point, "cpu", 1, shard)["peak_bytes"]
    finally:
        dist.destroy_process_group()
    return measured, rules[0], rules[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gpt", choices=("gpt", "temp"))
    parser.add_argument("--widths", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument("--layers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--micro", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--seq", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--world", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"))
    parser.add_argument("--vocab", type=int, default=512)
    args = parser.parse_args()
    use_checkout(always=True)
    from gpu_suite import Point

    errors: list[float] = []
    print(f"{'point':<34} {'N':>3} {'measured B':>12} {'nccl rule':>12} {'err':>7} "
          f"{'gloo rule':>12} {'err':>7}", flush=True)  # fmt: skip
    grid = itertools.product(args.widths, args.layers, args.micro, args.seq, args.world)
    for width, layers, micro, seq, world in grid:
        p = Point(args.model, width, layers, 4, args.vocab, args.dtype, micro, seq)
        measured, nccl, gloo = one(p, world)
        errors.append(nccl / measured - 1)
        print(f"{p.name:<34} {world:>3} {measured:>12,} {nccl:>12,} {errors[-1]:>+7.2%} "
              f"{gloo:>12,} {gloo / measured - 1:>+7.2%}", flush=True)  # fmt: skip
    size = [abs(e) for e in errors]
    print(f"nccl rule: median |error| {statistics.median(size):.2%}, signed {min(errors):+.2%} … "
          f"{max(errors):+.2%}; within ±5 %: {sum(e <= 0.05 for e in size)} of {len(errors)}; "
          f"under by more than 3 %: {sum(e < -0.03 for e in errors)}")  # fmt: skip


if __name__ == "__main__":
    main()
