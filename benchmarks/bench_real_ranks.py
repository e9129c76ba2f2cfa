"""Hundreds of real, idle ranks from one IPython shell (issue 26's "real processes" row).

    python benchmarks/bench_real_ranks.py [--ranks 100 300] [--cells 10] [--per-node P]

``--per-node P`` puts the ranks on nodes of P ranks each (``--nodes N/P --procs-per-node P``),
which matters with ``JUPYTER_DISTRIBUTED_RELAYS=always`` (a node relay per node).

Each rank is a real rank process of the local backend (no torch strategy, so no process group
of that size), on this machine, loopback only. Per rank count it prints:

- **start**: the first cell, from the magic to the cell's end (processes forked, connected and
  greeted; on 2 cores this is mostly forking and importing);
- **trivial cell**: wall time (median, p99) and the kernel's CPU (every thread) per ``pass`` cell;
- **dead rank named**: the last rank kills itself with SIGKILL mid-cell, the others sleep; from
  the rank's own time stamp just before the kill to the line under the cell that names it;
- **hang diagnosis**: ``--timeout 3`` on a cell where every rank but 0 sleeps; from the timeout
  firing to the diagnosis line (stacks grouped by where the ranks are);
- **stop frees every rank**: ``%distributed stop`` until no rank process is left;
- **memory**: the ranks' proportional set size (PSS), summed, per rank.

Wall times here share two cores between the kernel and hundreds of ranks: shapes, not claims.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_hang import Stamped, hang_case  # noqa: E402
from common import bench_shell, median, pct, rank_table  # noqa: E402


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
    return total / 1024


def alive(pids: list[int]) -> int:
    return sum(Path(f"/proc/{pid}").exists() for pid in pids)


def one(ip: Any, err: Stamped, n: int, cells: int, tmp: Path, per: int = 0) -> dict[str, str]:
    layout = f"--nodes {n // per} --procs-per-node {per}" if per else f"-n {n}"
    line = f"{layout} --oversubscribe --quiet"
    t0 = time.perf_counter()
    if not ip.run_cell(f"%%distributed {line} --pull pid\nimport os\npid = os.getpid()").success:
        raise RuntimeError(f"{n} ranks did not start")
    start = time.perf_counter() - t0
    pids = [int(p) for p in ip.user_ns["pid"]]
    memory = pss_mb(pids)
    walls, spent = [], []
    for _ in range(cells):
        c0, w0 = cpu(), time.perf_counter()
        ip.run_cell(f"%%distributed {line}\npass")
        walls.append(time.perf_counter() - w0)
        spent.append(cpu() - c0)
    hang = hang_case(ip, err, n, "sleep", "timeout", layout)
    stamp = tmp / f"killed-{n}"
    err.lines.clear()
    ip.run_cell(
        f"%%distributed {layout} --oversubscribe\nimport os, time\nif rank == {n - 1}:\n"
        f"    open({str(stamp)!r}, 'w').write(repr(time.monotonic()))\n"
        "    os.kill(os.getpid(), 9)\nelse:\n    time.sleep(30)"
    )
    named = err.first(f"rank {n - 1} on")
    dead = None if named is None or not stamp.exists() else named - float(stamp.read_text())
    ip.run_cell(f"%%distributed {line} --pull pid\nimport os\npid = os.getpid()")  # a new one
    pids2 = [int(p) for p in ip.user_ns["pid"]]
    t1 = time.perf_counter()
    ip.run_line_magic("distributed", "stop")
    while alive(pids2) and time.perf_counter() - t1 < 30:
        time.sleep(0.005)
    stop = time.perf_counter() - t1
    return {
        "start (first cell)": f"{start:.1f} s",
        "trivial cell wall, median / p99": (
            f"{median(walls) * 1e3:.0f} / {pct(walls, 99) * 1e3:.0f} ms"
        ),
        "kernel CPU per trivial cell (median)": f"{median(spent) * 1e3:.1f} ms",
        "dead rank named": "not named" if dead is None else f"{dead * 1e3:.0f} ms",
        "hang: timeout → diagnosis shown": "not shown" if hang is None else f"{hang * 1e3:.0f} ms",
        "stop frees every rank": f"{stop * 1e3:.0f} ms",
        "ranks' memory (PSS), per rank": f"{memory / n:.1f} MB",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[100, 300])
    parser.add_argument("--cells", type=int, default=10)
    parser.add_argument("--per-node", type=int, default=0, help="ranks a node (default: 1 node)")
    args = parser.parse_args()
    ip, tmp = bench_shell("jd-real-ranks-")
    err = Stamped(sys.stderr)
    real_err, sys.stderr = sys.stderr, err  # type: ignore[assignment]
    load0 = os.getloadavg()[0]
    rows: dict[int, dict[str, str]] = {}
    try:
        for n in args.ranks:
            rows[n] = one(ip, err, n, args.cells, Path(tempfile.mkdtemp(dir=tmp)), args.per_node)
            print(n, rows[n], file=real_err)
    finally:
        sys.stderr = real_err
    load = f"load {load0:.1f} → {os.getloadavg()[0]:.1f}"
    nodes = f", {args.per_node} a node" if args.per_node else ""
    relays = os.environ.get("JUPYTER_DISTRIBUTED_RELAYS", "auto")
    print(f"{os.cpu_count()} CPUs, {load}; real idle ranks (local backend{nodes}, relays {relays})")
    rank_table(rows, args.ranks)


if __name__ == "__main__":
    main()
