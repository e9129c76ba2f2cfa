"""The history store's own work for one trivial cell at 1,000 ranks behind relays (issue 26).

    PYTHONPATH=python python benchmarks/bench_store_cell.py [--ranks 1000] [--nodes 8]
                                                          [--cells 300] [--root] [--hosts]
                                                          [--pause 50]

A real store in a temporary folder, written on this thread as the kernel's I/O thread writes a
cell on a live cluster: the run's record (its row, its ranks' node spans, its first event) and
then the nodes' reductions (one ``RankStates`` each) with the run's ``completed`` end, either as
two transactions (a cell longer than the record's deadline) or as one. No process runs, so this
is the store's share alone.

``--root``: the ends as the kernel takes them through aggregators, one reduction (the root
aggregator's, ``running`` then ``done``, a kept chunk from cell to cell) of one span over every
node, not one per node. ``--hosts``: each node on a host of its own, as on a cluster (the
root's reduction then holds a span per node). ``--pause MS``: a sleep after each cell, as a
cell's wait for its ranks lets other threads and processes run: the CPU's caches are then cold,
as in a kernel, and the same transaction costs about three times its cost back to back.

Prints ``time.thread_time`` per cell (medians after 20 warm-up cells) and the WAL pages one
cell writes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import use_checkout  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--root", action="store_true", help="one span over every node")
    parser.add_argument("--pause", type=float, default=0.0, help="ms of sleep after each cell")
    parser.add_argument("--hosts", action="store_true", help="a host per node, as on a cluster")
    args = parser.parse_args()
    use_checkout()
    from jupyter_distributed.events import RankState, RankStates, RunEvent, RunState
    from jupyter_distributed.history.records import new_run_id
    from jupyter_distributed.history.store import RunRecord, Store
    from jupyter_distributed.layout import Layout

    per = args.ranks // args.nodes
    n = per * args.nodes
    layout = Layout(nodes=args.nodes, procs_per_node=per)
    host = [f"h{node}" if args.hosts else "h" for node in range(args.nodes)]
    coords = {
        r: {**layout.coords(r).to_json(), "host": host[r // per], "pid": 1000 + r} for r in range(n)
    }
    ranks, spec = list(range(n)), {"backend": "local", "n": n}  # (one list per spec, as a session)
    folder = tempfile.TemporaryDirectory(prefix="jd-bench-store-cell-")
    store = Store(Path(folder.name) / "history.sqlite3")

    # each node's pids: one tuple for every cell, as the kernel's rank views give them
    pids_of = [
        tuple(range(1000 + node * per, 1000 + (node + 1) * per)) for node in range(args.nodes)
    ]

    # the root's reduction: a kept chunk, the same tuple every cell (as cluster/fancompact.py's),
    # one span over every node on one host, or one span per node (--hosts)
    both = (RankState.RUNNING, RankState.DONE)
    chunk = (
        tuple((k * per, k * per + per - 1, both, host[k], pids_of[k]) for k in range(args.nodes))
        if args.hosts
        else ((0, n - 1, both, "h", tuple(range(1000, 1000 + n))),)
    )

    def ends(run_id: str) -> list[Any]:
        out: list[Any] = []
        if args.root:
            out.append(RankStates(run_id, time.time(), (), chunk))
            return [*out, RunEvent(run_id, time.time(), RunState.COMPLETED)]
        for node in range(args.nodes):
            first = node * per
            span = (first, first + per - 1, (RankState.DONE,), host[node], pids_of[node])
            out.append(RankStates(run_id, time.time(), (), (span,)))
        return [*out, RunEvent(run_id, time.time(), RunState.COMPLETED)]

    def cell(one: bool) -> tuple[float, float]:
        run = RunRecord(
            id=new_run_id(), backend="local", world_size=n, ranks=ranks, state=RunState.RUNNING,
            cluster_id="c-1", spec=spec, source="None", host="h", kernel_pid=1,
            started=time.time(), kernel_id="k",
        )  # fmt: skip
        t0 = time.thread_time()
        if one:
            store.append(ends(run.id), run=(run, coords))
            spent = time.thread_time() - t0, 0.0
        else:
            store.append([], run=(run, coords))
            t1 = time.thread_time()
            store.append(ends(run.id))
            spent = t1 - t0, time.thread_time() - t1
        time.sleep(args.pause / 1e3)
        return spent

    try:
        rows = []
        for one in (False, True):
            for _ in range(20):
                cell(one)
            spent = [cell(one) for _ in range(args.cells)]
            wal = Path(str(store.path) + "-wal")
            store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            cell(one)
            pages = (wal.stat().st_size - 32) // (4096 + 24) if wal.exists() else 0
            first = statistics.median(s[0] for s in spent)
            second = statistics.median(s[1] for s in spent)
            rows.append((one, first, second, pages))
    finally:
        store.close()
        folder.cleanup()
    print("| ranks | nodes | transactions per cell | record (+ ends) | ends | WAL pages per cell |")
    print("|---|---|---|---|---|---|")
    for one, first, second, pages in rows:
        ends_ms = "with the record" if one else f"{second * 1e3:.3f} ms"
        print(
            f"| {n:,} | {args.nodes} | {1 if one else 2} | {first * 1e3:.3f} ms | {ends_ms} "
            f"| {pages} |"
        )


if __name__ == "__main__":
    main()
