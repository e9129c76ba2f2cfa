"""The I/O thread's CPU per wake-up against how many descriptors it watches (issue 26).

The kernel's :class:`~jupyter_distributed.ioloop.IoLoop` watches a pidfd per relay and
aggregator (a 10,000-rank tree: ~90) or per rank on its host (a local cluster: one each), and
waits on its socket, its wake-up pipe and those. This starts a loop watching ``N`` pipes that
never become ready, wakes it ``--wakes`` times (each after the last was handled, as a cell's
messages do) and prints its thread's CPU per wake-up; then makes a few of the pipes ready and
checks that each watched function ran once. Honours ``PYTHONPATH`` (run each arm's
``python/`` for an A/B).

    PYTHONPATH=python python benchmarks/bench_watched.py [--watched 0 90 1000] [--wakes 3000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import zmq

from jupyter_distributed.ioloop import IoLoop


def _on_loop(loop: IoLoop, fn: object) -> None:
    done = threading.Event()

    def run() -> None:
        fn()  # type: ignore[operator]
        done.set()

    loop.call(run)
    if not done.wait(10):
        raise SystemExit("the loop did not answer within 10 s")


def one(watched: int, wakes: int) -> float:
    """µs of the loop thread's CPU per wake-up with ``watched`` pipes watched."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    loop = IoLoop(ctx.socket(zmq.DEALER), lambda b: None, lambda: None, lambda e: None, 60_000)
    loop.start()
    pipes = [os.pipe() for _ in range(watched)]
    fired: list[int] = []
    try:
        for i, (r, _) in enumerate(pipes):
            loop.watch(r, lambda i=i: fired.append(i))  # type: ignore[misc]
        cpu: list[float] = []
        _on_loop(loop, lambda: cpu.append(time.thread_time()))
        for _ in range(wakes):
            _on_loop(loop, lambda: None)
        _on_loop(loop, lambda: cpu.append(time.thread_time()))
        ready = list(range(0, watched, max(1, watched // 3)))[:3]
        for i in ready:
            os.write(pipes[i][1], b"x")
        deadline = time.monotonic() + 10
        while len(fired) < len(ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        _on_loop(loop, lambda: None)
        if sorted(fired) != ready:
            raise SystemExit(f"watched functions ran for {sorted(fired)}, not {ready}")
    finally:
        loop.stop(5)
        ctx.term()
        for _, w in pipes:
            os.close(w)
    return (cpu[1] - cpu[0]) / (wakes + 1) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watched", type=int, nargs="+", default=[0, 90, 1000])
    parser.add_argument("--wakes", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}, {args.wakes} wake-ups a round, {args.rounds} rounds")
    print("| descriptors watched | I/O thread's CPU per wake-up (median of rounds) |")
    print("|---|---|")
    for n in args.watched:
        each = [one(n, args.wakes) for _ in range(args.rounds)]
        print(f"| {n} | {statistics.median(each):.1f} µs ({', '.join(f'{x:.1f}' for x in each)}) |")


if __name__ == "__main__":
    main()
