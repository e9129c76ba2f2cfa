"""The kernel's CPU per output line at 1,000 ranks behind relays, lines alike across the ranks
or each rank's own (issue 26: the relay collapses identical lines).

    python benchmarks/bench_collapse_kernel.py [--ranks 1000] [--nodes 8] [--rounds 40]
                                               [--lines 10] [--drain 1] [--tree CHECKOUT]

Relays replaying a recorded line stream: each rank writes ``--lines`` lines per message,
``--rounds`` messages (``identical``: every rank the same lines, ``"epoch 3 step 7 loss
0.25"``, within a few ms of each other; ``distinct``: ``"rank 17 step 7 ..."``). Each node's
messages go through the checkout's own relay batching (its ``Batcher``, in this process, a
batch per round of its ranks' messages), signed as its relay signs them; the kernel's side is
real: a router and a history store driven on this thread (as the tests drive them, no I/O
thread), and the cell's view (collapsing on, as by default) taking every shown event. Prints
the kernel's CPU per line (``time.thread_time`` around the router's batches and the view) and
the lines/s that CPU allows, and checks that the history holds every line. ``--drain K`` hands
the router up to K relays' batches at a time, as its I/O loop takes what has queued (up to
1,000) when many relays send at once (default 1: each batch alone, the dearest). ``--tree`` runs
another checkout's code (an export of an older commit), for a before/after on one machine.
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RUN = "run-1"


def stream(kind: str, ranks: range, rounds: int, lines: int, t0: float) -> list[list[Any]]:
    """Per round, each rank's output header (fields only, times by the ranks' clocks)."""
    out = []
    for i in range(rounds):
        msgs = []
        for r in ranks:
            t = t0 + i * 0.05 + (r % 7) * 0.001
            who = "" if kind == "identical" else f"rank {r} "
            texts = [f"{who}epoch 3 step {i * lines + j} loss 0.25" for j in range(lines)]
            msgs.append([r, [[t, text] for text in texts]])  # (one read of its pipe: one time)
        out.append(msgs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--lines", type=int, default=10)
    parser.add_argument("--kind", nargs="+", default=["identical", "distinct"])
    parser.add_argument("--drain", type=int, default=1, help="batches per router call")
    parser.add_argument("--tree", default=str(HERE.parent))
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.tree, "python")))
    sys.path.insert(1, str(HERE))
    from common import kernel_router

    n = args.ranks // args.nodes * args.nodes
    print(
        f"{n:,} ranks behind {args.nodes} relays, {args.rounds} messages of {args.lines} lines, "
        f"up to {args.drain} batches per router call"
    )
    print("| lines | kernel CPU µs/line | of which the view | lines/s of kernel CPU | recorded |")
    print("|---|---|---|---|---|")
    for kind in args.kind:
        with kernel_router(n, args.nodes, "running") as (router, store, key):
            batches = relayed(key, kind, n, args)
            chunks = [batches[i : i + args.drain] for i in range(0, len(batches), args.drain)]
            recorded, cpu, view_cpu = replay(router, store, chunks, n)
        total = n * args.rounds * args.lines
        print(
            f"| {kind} | {cpu / total * 1e6:.2f} | {view_cpu / total * 1e6:.2f} | "
            f"{total / cpu:,.0f} | {recorded:,} of {total:,} |",
            flush=True,
        )


def relayed(key: bytes, kind: str, n: int, args: Any) -> list[list[Any]]:
    """The stream as the relays send it: each node's ranks' messages through its batching (a
    batch per round), signed by the relay (made before timing: the relays' work)."""
    import zmq

    from jupyter_distributed.cluster.relaybatch import Batcher
    from jupyter_distributed.protocol.signing import Signer

    per = n // args.nodes
    relays = [Signer(key, f"n{i}") for i in range(args.nodes)]
    batchers = [Batcher(range(i * per, (i + 1) * per)) for i in range(args.nodes)]
    cell = {"type": "execute", "run_id": RUN, "dst": [f"c{r}" for r in range(n)]}
    for b in batchers:
        alike = getattr(b, "alike", None)
        if alike is not None:  # (a relay sees the cell go down: which ranks run it)
            alike.sent(cell)
    seq = dict.fromkeys(range(n), 0)
    batches = []
    for msgs in stream(kind, range(n), args.rounds, args.lines, time.time()):
        for r, lines in msgs:
            seq[r] += 1
            header = {"type": "output", "src": f"r{r}", "seq": seq[r], "run_id": RUN,
                      "stream": "stdout", "lines": lines}  # fmt: skip
            if not batchers[r // per].keep(header, 0, 40 * len(lines) + 80):
                raise SystemExit("a message did not fit a batch: lower --lines")
        for i, b in enumerate(batchers):
            fields = b.take()
            if fields is not None:
                frames = relays[i].pack(fields)
                batches.append([zmq.Frame(f"relay{i}".encode()), *map(zmq.Frame, frames)])
    return batches


def replay(router: Any, store: Any, chunks: list[list[Any]], n: int) -> tuple[int, float, float]:
    """The batches into the kernel: lines recorded, its CPU (all, and the view's part)."""
    from jupyter_distributed.display import CellView
    from jupyter_distributed.history.store import RunRecord

    store.create_run(RunRecord(RUN, "local", n, list(range(n))), {r: {} for r in range(n)})
    router.ranks.begin(RUN)
    view = CellView(RUN, out=io.StringIO(), err=io.StringIO(), ranks=range(n))
    io_cpu = view_cpu = 0.0
    for chunk in chunks:
        t0 = time.thread_time()
        router._on_batch(chunk)
        t1 = time.thread_time()
        while not router.inbox.empty():
            events = getattr(router.inbox.get_nowait(), "events", None)
            if events is not None:
                view.on_events(events)
        view.maybe_flush()
        t2 = time.thread_time()
        io_cpu, view_cpu = io_cpu + t1 - t0, view_cpu + t2 - t1
    t0 = time.thread_time()
    view.finish()
    view_cpu += time.thread_time() - t0
    kept, after = 0, 0
    while page := store.events_after(after, RUN, limit=20_000):  # (every line recorded?)
        kept += sum(1 for _, e in page if e.get("kind") == "output")
        after = page[-1][0]
    return kept, io_cpu + view_cpu, view_cpu


if __name__ == "__main__":
    main()
