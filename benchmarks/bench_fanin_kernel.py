"""The kernel's own work for a cell's ends arriving as relays' reductions (issue 26).

    PYTHONPATH=python python benchmarks/bench_fanin_kernel.py [--ranks 1000] [--nodes 4]
                                                         [--cells 15] [--no-value] [--ranges]
                                                         [--aggregators 9]

A real router and history store, driven on this thread without its I/O thread (as the tests
drive it): per cell, each of ``--nodes`` relays' signed reductions of its ranks' ``Done`` (ok,
with a value, as ``bench_scale.py``'s fake ranks answer) is verified, expanded, decoded and
recorded, and the inbox drained (``--no-value``: the ranks' ``Done`` carry no value, as a real
rank's trivial cell, ``pass``, ends; ``--ranges``: and they come as a relay sends such plain
ends to a kernel that takes them, as spans of ranks with their counters; ``--aggregators K``:
and the nodes' reductions come merged by K aggregators, as this checkout's aggregator merges
them, each node on a host of its own). Prints the I/O
thread's CPU time per cell (``time.thread_time``) and the part of it in ``Store.append``,
medians over the cells after the first. No relay or rank process runs, so this is the
kernel's share alone, steadier than ``bench_scale.py`` on a shared machine.
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import use_checkout  # noqa: E402


def reduction(
    run: str, ranks: range, seq: int, value: bool = True, ranged: bool = False
) -> dict[str, Any]:
    done = {"type": "done", "run_id": run, "status": "ok", **({"value": "x"} if value else {})}
    if ranged and not value:
        return {
            "type": "dones", "run_id": run, "done": len(ranks), "of": len(ranks),
            "statuses": {"ok": len(ranks)}, "errors": 0, "slowest_rank": ranks[0],
            "slowest_ms": 1.0, "each": [], "ranges": [[ranks[0], ranks[-1]]],
        }  # fmt: skip
    return {
        "type": "dones", "run_id": run, "done": len(ranks), "of": len(ranks),
        "statuses": {"ok": len(ranks)}, "errors": 0, "slowest_rank": ranks[0],
        "slowest_ms": 1.0, "each": [[r, seq, 0, done] for r in ranks],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--cells", type=int, default=15)
    parser.add_argument("--no-value", action="store_true", help="ends without a value")
    parser.add_argument("--ranges", action="store_true", help="with --no-value: as ranges")
    parser.add_argument("--aggregators", type=int, default=0, help="with --ranges: merged by")
    args = parser.parse_args()
    use_checkout()
    import zmq

    from jupyter_distributed.cluster.aggregator import merged
    from jupyter_distributed.cluster.router import Router
    from jupyter_distributed.cluster.transport import Transport
    from jupyter_distributed.history.store import RunRecord, Store
    from jupyter_distributed.interface import RankInfo
    from jupyter_distributed.layout import Layout
    from jupyter_distributed.protocol.signing import Signer

    key, n, nodes = secrets.token_bytes(32), args.ranks // args.nodes * args.nodes, args.nodes
    folder = tempfile.TemporaryDirectory(prefix="jd-bench-fanin-")
    store = Store(Path(folder.name) / "history.sqlite")
    layout = Layout(nodes=nodes, procs_per_node=n // nodes)

    def host(rank: int) -> str:  # (behind aggregators: a host per node, as on a cluster)
        return f"h{layout.coords(rank).node_rank}" if args.aggregators else "here"

    info = {r: RankInfo(r, host(r), 100 + r, "idle", layout.coords(r)) for r in range(n)}
    router = Router("jd-bench", store, info, key, lambda: None, lambda why: None, Transport.ipc())
    per = -(-nodes // args.aggregators) if args.aggregators else 1
    groups = [range(a, min(nodes, a + per)) for a in range(0, nodes, per)]
    name = (lambda g: f"a{g[0]}-{g[-1]}") if args.aggregators else (lambda g: f"n{g[0]}")
    signers = [Signer(key, name(g)) for g in groups]
    spent: list[float] = []
    appended: list[float] = []
    append = store.append

    def timed_append(*a: Any, **k: Any) -> int:
        t0 = time.thread_time()
        try:
            return append(*a, **k)
        finally:
            appended[-1] += time.thread_time() - t0

    store.append = timed_append  # type: ignore[method-assign]
    try:
        # where the ranks are, as the session makes it once per cluster (recorder.cluster_coords)
        coords = {r: {**i.coords.to_json(), "host": i.host, "pid": i.pid} for r, i in info.items()}
        for cell in range(1, args.cells + 1):
            run = f"run-{cell}"
            store.create_run(RunRecord(run, "local", n, list(range(n))), coords)
            router.ranks.begin(run)
            router.cell.awaited = set(range(n))
            messages = []
            for g, signer in zip(groups, signers, strict=True):
                parts = [
                    {**reduction(run, range(i * n // nodes, (i + 1) * n // nodes), cell,
                                 not args.no_value, args.ranges), "src": f"n{i}"}
                    for i in g
                ]  # fmt: skip
                fields = merged(run, parts) if args.aggregators else parts[0]
                frames = signer.pack({k: v for k, v in fields.items() if k != "src"})
                messages.append(
                    [zmq.Frame(f"peer{g[0]}".encode()), *(zmq.Frame(bytes(f)) for f in frames)]
                )
            appended.append(0.0)
            t0 = time.thread_time()
            for frames in messages:  # (one reduction per batch, as they come)
                router._on_batch([frames])
            spent.append(time.thread_time() - t0)
            while not router.inbox.empty():
                router.inbox.get_nowait()
            router._ended()
        if router.reduced_ends != args.cells * n:
            raise SystemExit(f"only {router.reduced_ends} of {args.cells * n} ends were taken")
    finally:
        router.listener.close()
        router._loop.sock.close(linger=0)
        router._loop.sock.context.term()
        store.close()
        folder.cleanup()
    print("| ranks | relays | aggregators | values | I/O thread CPU per cell's ends | of which "
          "Store.append |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    total, stored = statistics.median(spent[1:]), statistics.median(appended[1:])
    value = ("none, as ranges" if args.ranges else "none") if args.no_value else "one per rank"
    print(f"| {n:,} | {nodes} | {args.aggregators or '-'} | {value} | {total * 1e3:.1f} ms | "
          f"{stored * 1e3:.1f} ms |")  # fmt: skip


if __name__ == "__main__":
    main()
