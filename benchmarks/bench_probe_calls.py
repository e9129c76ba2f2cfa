"""How steady the probe's per-call figure (``allreduce_call_s``) is for the number of calls it
times (issue 25: the advisor prices each of FSDP's calls at it).

Two gloo ranks on 127.0.0.1 time ``--blocks`` × ``--calls`` small all_reduces exactly as
:func:`jupyter_distributed.worker.probe._calls` does (a barrier, ``WORK_S`` of the rank's own
work, the call). Each block of the first N calls is scored as a probe of N calls would score
it (the slowest rank's mean of its calls less the slowest 1/8), for N = 16 (the probe's count
before) and 48, and the table gives the figures' spread across blocks.

    PYTHONPATH=python python benchmarks/bench_probe_calls.py [--blocks 12] [--calls 48]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import time
from typing import Any

from common import use_checkout

use_checkout()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank(rank: int, port: int, blocks: int, calls: int, out: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank))
    os.environ.update(WORLD_SIZE="2", OMP_NUM_THREADS="1")
    import torch

    from jupyter_distributed.worker import probe

    torch.set_num_threads(1)
    lib = probe._Torch()
    buf = lib.buffer(probe.KB)
    lib.allreduce(buf)  # warm-up, as the probe does
    seconds = []
    for _ in range(blocks * calls):
        lib.barrier()
        probe._busy(probe.WORK_S)
        t0 = time.perf_counter()
        lib.allreduce(buf)
        lib.sync()
        seconds.append(time.perf_counter() - t0)
    out.put((rank, seconds))
    lib.close()


def score(calls: list[float]) -> float:
    """A probe's figure from one rank's calls: the mean less the slowest 1/8 (2 of 16)."""
    return statistics.fmean(sorted(calls)[: len(calls) - max(1, len(calls) // 8)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=12)
    parser.add_argument("--calls", type=int, default=48)
    args = parser.parse_args()
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = _port()
    procs = [
        ctx.Process(target=_rank, args=(r, port, args.blocks, args.calls, out)) for r in (0, 1)
    ]
    for p in procs:
        p.start()
    got = dict(out.get(timeout=600) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    load = os.getloadavg()[0]
    print(f"2 gloo ranks, {args.blocks} blocks of {args.calls} calls, load {load:.1f}")
    print("| calls a probe times | figure per block, ms: min / median / max | max ÷ min |")
    print("|---|---|---|")
    for n in sorted({16, 48, args.calls} & set(range(1, args.calls + 1))):
        figures = []
        for b in range(args.blocks):
            lo = b * args.calls
            figures.append(max(score(got[r][lo : lo + n]) for r in (0, 1)) * 1e3)
        lo_, mid, hi = min(figures), statistics.median(figures), max(figures)
        print(f"| {n} | {lo_:.2f} / {mid:.2f} / {hi:.2f} | {hi / lo_:.2f} |")
    every = [s * 1e3 for r in (0, 1) for s in got[r]]
    qs = statistics.quantiles(every, n=10)
    mid = statistics.median(every)
    print(f"every call, ms: p10 {qs[0]:.2f}, median {mid:.2f}, p90 {qs[-1]:.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
