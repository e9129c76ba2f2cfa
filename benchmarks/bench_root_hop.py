"""The root aggregator's own CPU per cell at many ranks (issue 26), without processes.

The root (aggregator 0 where there are several, :mod:`jupyter_distributed.cluster.aggregator`)
reads each cell's ``dst`` to start awaiting its ranks' ends and to route the cell to its
connections below; then it holds its relays' and the other aggregators' reductions and merges
them into one. This times those steps, with the real ``Merger`` and ``Receivers``, at
``--ranks`` ranks in nodes of ``--per-node``, aggregators of √nodes: the ``dst`` read every cell
(as each hop read it before ``relaydsts``) against read once per ``dst`` (``ByDst``, now), and
the hold and merge. Prints a table of medians over ``--cells`` cells (``time.process_time``).

    PYTHONPATH=python python benchmarks/bench_root_hop.py [--ranks 1000 10000] [--cells 20]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import median, use_checkout

use_checkout(always=True)
from jupyter_distributed.cluster import fanin, hopnames  # noqa: E402
from jupyter_distributed.cluster.aggregator import Merger  # noqa: E402
from jupyter_distributed.cluster.relaydsts import ByDst  # noqa: E402
from jupyter_distributed.protocol.receivers import Receivers  # noqa: E402
from jupyter_distributed.protocol.signing import cell_name, rank_name  # noqa: E402


def reduction(src: str, first: int, last: int, **extra: Any) -> dict[str, Any]:
    done = last - first + 1
    return {
        "type": fanin.REDUCED, "run_id": "x", "done": done, "of": done, "statuses": {"ok": done},
        "errors": 0, "slowest_rank": first, "slowest_ms": 1.0, "each": [],
        "ranges": [[first, last]], "src": src, **extra,
    }  # fmt: skip


def one(ranks: int, per: int, cells: int) -> dict[str, float]:
    nodes = ranks // per
    fan = max(2, math.ceil(math.sqrt(nodes)))
    groups = [(a, min(nodes, a + fan) - 1) for a in range(0, nodes, fan)]
    mine = {cell_name(r): r for r in range(ranks)}
    routes = {f(r): b"%d" % (r // per // fan) for r in range(ranks) for f in (rank_name, cell_name)}
    merges = frozenset(hopnames.aggregator_name(*g) for g in groups[1:])
    dst = [f"c0-{ranks - 1}"]
    every: list[float] = []
    once: list[float] = []
    merge: list[float] = []
    merger = Merger(mine, merges=merges)
    peers = ByDst(lambda d: list({routes[n] for n in d.among(routes)}))
    for _ in range(cells):
        t0 = time.process_time()
        {mine[d] for d in Receivers(dst).among(mine)}  # (as each hop did, every cell)
        {routes[n] for n in Receivers(dst).among(routes)}
        t1 = time.process_time()
        merger.sent({"type": "execute", "run_id": "x", "dst": dst})
        peers.get(dst)
        t2 = time.process_time()
        for node in range(groups[0][0], groups[0][1] + 1):
            merger.hold(reduction(hopnames.relay_name(node), node * per, node * per + per - 1))
        for first, last in groups[1:]:
            names = [hopnames.relay_name(n) for n in range(first, last + 1)]
            src = hopnames.aggregator_name(first, last)
            merger.hold(reduction(src, first * per, (last + 1) * per - 1, nodes=names))
        (out,), _ = merger.due()
        t3 = time.process_time()
        assert out["ranges"] == [[0, ranks - 1]]
        every.append(t1 - t0)
        once.append(t2 - t1)
        merge.append(t3 - t2)
    return {
        "aggregators": len(groups),
        "dst read every cell": median(every) * 1000,
        "dst read once (first cell)": once[0] * 1000,
        "dst read once (median)": median(once) * 1000,
        "hold + merge": median(merge) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--per-node", type=int, default=125)
    parser.add_argument("--cells", type=int, default=20)
    args = parser.parse_args()
    rows = {n: one(n, min(args.per_node, n), args.cells) for n in args.ranks}
    print(f"root aggregator's CPU per cell, ms (median of {args.cells}), {args.per_node}/node")
    print("| metric | " + " | ".join(f"{n:,} ranks" for n in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for key in next(iter(rows.values())):
        cells = (
            f"{r[key]:.0f}" if key == "aggregators" else f"{r[key]:.2f}" for r in rows.values()
        )
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
