"""What torch's flight recorder costs a small collective: 1000 ``all_reduce`` of 4 floats on 2
gloo ranks (loopback), with ``TORCH_FR_BUFFER_SIZE=0`` (off) and ``2000`` (what ranks of torch
strategies get unless the user set it; torch 2.13's own default too), in alternating rounds.

    python benchmarks/bench_flight.py [--rounds 6] [--reps 10]

Prints each setting's median and best time per 1000 calls over all rounds.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

CALLS = 1000


def rank_main(rank: int, port: int, reps: int) -> None:
    import torch
    import torch.distributed as dist

    addr = f"tcp://127.0.0.1:{port}"
    dist.init_process_group("gloo", rank=rank, world_size=2, init_method=addr)
    t = torch.ones(4)
    for _ in range(200):  # warm up
        dist.all_reduce(t)
    for _ in range(reps):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            dist.all_reduce(t)
        if rank == 0:
            print((time.perf_counter() - t0) * 1000, flush=True)
    dist.destroy_process_group()


def one_round(size: str, reps: int) -> list[float]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "TORCH_FR_BUFFER_SIZE": size, "GLOO_SOCKET_IFNAME": "lo"}
    args = [sys.executable, __file__, "--rank"]
    procs = [
        subprocess.Popen([*args, str(r), str(port), str(reps)], env=env, stdout=subprocess.PIPE)  # noqa: S603
        for r in (0, 1)
    ]
    out = [p.communicate(timeout=300)[0] for p in procs]
    return [float(line) for line in out[0].split()]


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--reps", type=int, default=10)
    opts = parser.parse_args()
    times: dict[str, list[float]] = {"0": [], "2000": []}
    for _ in range(opts.rounds):
        for size in times:
            times[size] += one_round(size, opts.reps)
    print(f"load average (1 min): {os.getloadavg()[0]:.1f}")
    for size, ms in times.items():
        print(
            f"TORCH_FR_BUFFER_SIZE={size}: {CALLS} all_reduce(4 floats) median "
            f"{statistics.median(ms):.0f} ms, best {min(ms):.0f} ms (n={len(ms)})"
        )


if __name__ == "__main__":
    main()
