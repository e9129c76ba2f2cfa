"""GPipe against 1F1B on the same 2-stage pipeline, alternated step by step in one process
group: per step, the wall time, the rank's CPU time (all its threads: compute, gloo's threads),
its main thread's CPU time and the minor page faults, medians per schedule.

Run: ``python benchmarks/bench_pipeline_schedules.py [--models mlp,deep,tfm] [--m 2,4,8]
[--steps 40]``. Two gloo ranks on 127.0.0.1, 1 torch thread each (the suite's CPU ranks),
the pipeline helper's own runner (``worker/pipeline.py``), the advisor's stand-in loss, AdamW,
a barrier before each step (as ``worker/measure.py`` times them).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import use_checkout

BATCH = {"mlp": (8, 16), "deep": (16, None), "tfm": (8, 32)}


def models() -> dict[str, Any]:
    import torch

    def mlp() -> Any:
        return torch.nn.Sequential(torch.nn.Embedding(512, 64),
            *[torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(),
                                  torch.nn.Linear(256, 64)) for _ in range(3)],
            torch.nn.Linear(64, 512))  # fmt: skip

    def deep() -> Any:
        layers = [torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh()) for _ in range(16)]
        return torch.nn.Sequential(*layers)

    def tfm() -> Any:
        return torch.nn.Sequential(torch.nn.Embedding(1000, 64),
            *[torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True, dropout=0.0)
              for _ in range(2)], torch.nn.Linear(64, 1000))  # fmt: skip

    return {"mlp": mlp, "deep": deep, "tfm": tfm}


def rank_main(rank: int, args: Any, port: int, out: Any) -> None:
    import torch
    import torch.distributed as dist

    from jupyter_distributed.layout import Layout, ModelParallel, Pipeline
    from jupyter_distributed.modelshapes import loss_of, sample_input
    from jupyter_distributed.worker.pipeline import PipelineRunner, build_mesh

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    device = torch.device("cpu")
    rows = []
    for name in args.models.split(","):
        batch, seq = BATCH[name]
        factory = models()[name]
        for m in [int(x) for x in args.m.split(",")]:
            runners = {}
            for sched in (Pipeline.SIMPLE, Pipeline.INTERLEAVED):
                mp = ModelParallel(partitions=2, microbatches=m, pipeline=sched)
                layout = Layout(procs_per_node=2, strategy="model-parallel", model_parallel=mp)
                mesh = build_mesh(layout, device)
                torch.manual_seed(0)
                runners[sched.value] = PipelineRunner(
                    factory(), mesh, mp, lambda out, _t: loss_of(out), device
                )
            opts = {k: torch.optim.AdamW(r.parameters()) for k, r in runners.items()}
            torch.manual_seed(0)
            x = sample_input(factory(), batch, seq)
            target = torch.zeros(batch)
            got: dict[str, list[tuple[float, float, float, int]]] = {k: [] for k in runners}
            for i in range(args.steps + 3):
                for key, r in runners.items():
                    dist.barrier()
                    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                    c0, t0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
                    opts[key].zero_grad()
                    r.step(x if r.is_first else None, target if r.is_last else None)
                    opts[key].step()
                    w = time.perf_counter() - w0
                    c, t = time.process_time() - c0, time.thread_time() - t0
                    f = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
                    if i >= 3:
                        got[key].append((w, c, t, f))
            for key, v in got.items():
                rows.append((name, m, key, rank, *[statistics.median(s[j] for s in v)
                                                   for j in range(4)]))  # fmt: skip
    out.put(rows)
    dist.destroy_process_group()


def main() -> None:
    use_checkout(always=True)
    import multiprocessing as mp_

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,deep,tfm")
    parser.add_argument("--m", default="2,4,8")
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    ctx = mp_.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=rank_main, args=(r, args, port, q)) for r in range(2)]
    load = os.getloadavg()[0]
    for p in procs:
        p.start()
    rows = sorted(q.get() + q.get())
    for p in procs:
        p.join()
    print(f"load {load:.1f} -> {os.getloadavg()[0]:.1f}; medians over {args.steps} steps")
    print("| model | m | schedule | rank | wall ms | CPU ms (all threads) | main thread ms "
          "| faults |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, m, key, rank, w, c, t, f in rows:
        print(f"| {name} | {m} | {key} | {rank} | {w * 1e3:.2f} | {c * 1e3:.2f} | {t * 1e3:.2f} "
              f"| {f:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
