"""How steady the probe's price of a message on busy cores is (issue 25,
``probe_slot.py`` beside it), beside the pairs' figures the advisor prices a
pipeline message from today.

Two gloo ranks on 127.0.0.1 (1 torch thread each) run ``--probes`` probes ``--gap`` seconds
apart; each probe times the pairs' 20 round trips of 8 bytes (as :func:`.worker.probe._pairs`)
and then ``probe_slot.measure``; ``--inside K`` makes K such measures in one launch,
``--inside-gap`` seconds apart. One line per measure, then the spread.

    PYTHONPATH=python python benchmarks/bench_probe_slot.py [--probes 5] [--gap 60] \
        [--inside 1] [--inside-gap 5] [--cross]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import socket
import statistics
import time
from typing import Any


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank(
    rank: int, port: int, rounds: int, inside: tuple[int, float], cross: bool, out: Any
) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank))
    os.environ.update(WORLD_SIZE="2", OMP_NUM_THREADS="1")
    import probe_slot
    import torch

    from jupyter_distributed.worker import probe

    torch.set_num_threads(1)
    lib = probe._Torch()
    lib.barrier()
    for i in range(inside[0]):  # measures inside one launch, ``inside[1]`` s apart
        if i:
            time.sleep(inside[1])
            lib.barrier()
        t0 = time.perf_counter()
        pairs = probe._pairs(lib, 4 * probe.MB, probe.LATENCY_ROUND_TRIPS, 2)
        slot = probe_slot.measure(lib, rounds, cross=cross)
        slot["seconds"] = time.perf_counter() - t0
        if rank == 0:
            out.put({"pairs": pairs["0-1"], **slot})
    lib.close()


def one(rounds: int, inside: tuple[int, float], cross: bool) -> list[dict[str, Any]]:
    ctx = mp.get_context("spawn")
    q: Any = ctx.Queue()
    port = _port()
    procs = [ctx.Process(target=_rank, args=(r, port, rounds, inside, cross, q)) for r in range(2)]
    for p in procs:
        p.start()
    got = [dict(q.get(timeout=120 + inside[0] * inside[1])) for _ in range(inside[0])]
    for p in procs:
        p.join(timeout=30)
    return got


def show(r: dict[str, Any], launch: int) -> None:
    """One measure's line (``launch``: which launch it was made in)."""
    old = 4 * r["pairs"]["latency_us"] / 1e3
    r["old_msg_ms"] = old
    lo, hi = r["slot_message_ci_s"]
    clo, chi = r["call_after_compute_ci_s"]
    print(
        f"| {launch} | {time.strftime('%H:%M:%S', time.gmtime())} | {os.getloadavg()[0]:.1f} "
        f"| {old:.3f} | {r['slot_message_s'] * 1e3:.3f} ({lo * 1e3:.3f}-{hi * 1e3:.3f}) "
        f"| {r['call_after_compute_s'] * 1e3:.3f} ({clo * 1e3:.3f}-{chi * 1e3:.3f}) "
        f"| {r['slot_compute_s'] * 1e3:.2f} | {r['seconds']:.2f} |",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probes", type=int, default=5, help="launches")
    ap.add_argument("--gap", type=float, default=60.0, help="seconds between launches")
    ap.add_argument("--rounds", type=int, default=160)
    ap.add_argument("--inside", type=int, default=1, help="measures per launch")
    ap.add_argument("--inside-gap", type=float, default=5.0, help="seconds between them")
    ap.add_argument("--cross", action="store_true", help="the two messages cross (isend+recv)")
    args = ap.parse_args()
    rows = []
    print(
        "| launch | UTC | load | old msg (2 best RT) ms | slot msg ms (95 %) "
        "| call after compute ms (95 %) | compute ms | probe s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for i in range(args.probes):
        if i:
            time.sleep(args.gap)
        for r in one(args.rounds, (args.inside, args.inside_gap), args.cross):
            rows.append(r)
            show(r, i)
    for key, scale in (("old_msg_ms", 1.0), ("slot_message_s", 1e3), ("call_after_compute_s", 1e3)):
        v = [r[key] * scale for r in rows]
        print(f"{key}: min {min(v):.3f} median {statistics.median(v):.3f} max {max(v):.3f} ms")


if __name__ == "__main__":
    main()
