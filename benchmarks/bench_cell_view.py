"""A cell's view on the kernel's main thread at 1,000 to 10,000 ranks (issue 26).

    PYTHONPATH=python python benchmarks/bench_cell_view.py [--ranks 1000 10000] [--cells 200]

What each cell of a live cluster costs its view (:class:`~jupyter_distributed.display.CellView`)
that grows with the cluster: the view made for the cell's ranks (the spec's one tuple, as a
session gives it) and a cell's ends taken as its nodes' reductions (one span of 125 ranks each,
as relays send them), shown (a notebook's default) and ``--quiet``. No process runs: this is the
view's own ``time.thread_time`` per cell, median of ``--cells``, in a hot loop (the kernel pays
more per cell where other processes share its cores).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import use_checkout  # noqa: E402

PER_NODE = 125


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--cells", type=int, default=200)
    args = parser.parse_args()
    use_checkout()
    from jupyter_distributed.display import CellView
    from jupyter_distributed.events import RankState, RankStates

    print("| ranks | view | view made + a cell's ends (median) |")
    print("|---|---|---|")
    for n in args.ranks:
        ranks = tuple(range(n))
        spans = [
            (f, min(f + PER_NODE, n) - 1, (RankState.DONE,), "h", ranks[f : f + PER_NODE])
            for f in range(0, n, PER_NODE)
        ]
        for quiet in (False, True):
            spent = []
            for _ in range(args.cells):
                t0 = time.thread_time()
                view = CellView(quiet=quiet, ranks=ranks, out=io.StringIO(), err=io.StringIO())
                view.on_events([RankStates("r", time.time(), (), spans)])
                view.finish()
                spent.append(time.thread_time() - t0)
            shown = "--quiet" if quiet else "shown"
            print(f"| {n:,} | {shown} | {statistics.median(spent) * 1e3:.3f} ms |")


if __name__ == "__main__":
    main()
