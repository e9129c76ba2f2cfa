"""Local ranks forked from a fork server against spawned ones (``DistributedLocal.fork``).

    python benchmarks/bench_fork.py [--ranks 2 8] [--repeat 3] [--nodes 1] [--relays auto]

Per rank count and mode (``all``: every rank forked, the default; ``never``: every rank spawned
with the kernel's Python), alternated, each in a fresh kernel process (an IPython shell with
``%%distributed``): the kernel's first cell (its fork server started on the way), then, after
``%distributed stop``, a later cluster's first cell (the fork server already up). Prints the
medians and every run. On 2 shared cores the ranks' imports are what a spawned start waits
for; hundreds of ranks: ``bench_real_ranks.py`` under ``JUPYTER_DISTRIBUTED_LOCAL_FORK``.
``--nodes K --relays always`` spreads each count of ranks over K nodes with a node relay each
(``Distributed.relays``), forked from the same fork server as the ranks, or spawned with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

KERNEL = """
import json, sys, time
sys.path.insert(0, {here!r})
from common import bench_shell
ip, _ = bench_shell("jd-bench-fork-")
took = []
for _ in range(2):
    t0 = time.perf_counter()
    if not ip.run_cell("%%distributed {layout} --quiet --oversubscribe\\npass").success:
        raise SystemExit("the cell failed")
    took.append(time.perf_counter() - t0)
    ip.run_line_magic("distributed", "stop")
print("TOOK", json.dumps(took))
"""


def one(mode: str, n: int, nodes: int = 1, relays: str = "auto") -> list[float]:
    """(first cell of a fresh kernel, a later cluster's first cell) in seconds, for ``n`` ranks
    on ``nodes`` nodes."""
    env = {
        **os.environ,
        "JUPYTER_DISTRIBUTED_LOCAL_FORK": mode,
        "JUPYTER_DISTRIBUTED_RELAYS": relays,
    }
    layout = f"-n {n}" if nodes == 1 else f"--nodes {nodes} --procs-per-node {n // nodes}"
    done = subprocess.run(  # noqa: S603 (this Python, our own script)
        [sys.executable, "-c", KERNEL.format(here=str(HERE), layout=layout)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    for line in done.stdout.splitlines():
        if line.startswith("TOOK "):
            return [float(x) for x in json.loads(line[5:])]
    raise RuntimeError(f"fork={mode} n={n} failed: {done.stderr[-1500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 8])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=1, help="nodes (each count: ranks in all)")
    parser.add_argument("--relays", default="auto", choices=("auto", "always", "tree", "never"))
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; fresh kernel processes, modes alternated", end="")
    print(f"; {args.nodes} nodes, relays {args.relays}" if args.nodes > 1 else "")
    print("| ranks | fork | kernel's first cell (median; runs) | a later cluster's first cell |")
    print("|---|---|---|---|")
    for n in args.ranks:
        runs: dict[str, list[list[float]]] = {"all": [], "never": []}
        for r in range(args.repeat):
            for mode in ("all", "never") if r % 2 == 0 else ("never", "all"):
                runs[mode].append(one(mode, n, args.nodes, args.relays))
        for mode, got in runs.items():
            cells = []
            for i in (0, 1):
                ms = [round(g[i] * 1e3) for g in got]
                cells.append(f"{statistics.median(ms):.0f} ms ({', '.join(map(str, ms))})")
            print(f"| {n} | {mode} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
