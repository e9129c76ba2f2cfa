"""Slurm's step launch with node relays at tens of nodes: many ``slurmd -N`` daemons on this
machine (Slurm's multiple-slurmd mode), a ``%%distributed --backend slurm`` cluster across them.

    python benchmarks/bench_slurm_nodes.py [--nodes 16 64] [--per-node 1] [--cells 20]
        [--relays auto never]

Needs root (a network namespace) and Slurm's Debian packages; the daemons are the test suite's
harness (``tests/python/engines/slurm.py``) with more nodes, stopped by PID. Every node, rank and
relay shares this machine's cores, so the times are a shape, not a claim (issue 26: "claim only
shapes ... for Slurm's multiple-slurmd mode at 64-128 fake nodes"); the kernel's peers and
descriptors, and its CPU per cell, are the kernel's own. Rows:

- daemons up: munged, slurmctld and the N slurmd started, until every node is idle;
- first cell: a cold ``pass`` cell (srun's step of N×P ranks, the relays' step of N tasks, every
  rank's hello through its relay) until it returns;
- warm trivial cell: ``pass``, median / p90 of ``--cells``; kernel CPU: this process's CPU time
  (all its threads) per warm cell;
- kernel peers and descriptors: the cluster's connections (one per relay) and ``/proc/self/fd``;
- dead relay: a running cell, one node's relay SIGKILLed, until the relay is named under the cell
  (→ until the cell returns, the cluster ended);
- stop: ``%distributed stop`` of a fresh cluster until it returns (→ ``squeue`` empty).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent), str(HERE.parent / "python")]

from bench_core import write_section  # noqa: E402
from bench_engines import Cells, Engine, alive, section, shell  # noqa: E402
from common import capture, median, pct  # noqa: E402

SECTION = "## Slurm at tens of nodes, through node relays (`benchmarks/bench_slurm_nodes.py`)"


class ManyNodes(Engine):
    """The harness's Slurm cluster with ``nodes`` slurmd daemons."""

    def __init__(self, root: Path, nodes: int) -> None:
        super().__init__("slurm", root)
        self.count = nodes

    def up(self) -> float:
        from tests.python.engines import slurm

        t0 = time.perf_counter()
        self.handle = slurm.SlurmCluster(self.root, nodes=self.count)
        self.pids = {p.pid for p in self.handle.procs}
        return time.perf_counter() - t0


def dead_relay(cells: Cells, engine: ManyNodes, flags: str, tmp: Path) -> str:
    """A cell that started on every rank; one relay killed; the times until the relay is named
    under the cell and until the cell returns (after the cluster is ended)."""
    marker = tmp / f"started-{time.monotonic_ns()}"
    killed: list[float] = []

    def kill() -> None:
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)  # (every rank in the cell, not only the first)
        relay = max(engine.handle.relay_pids())
        killed.append(time.time())
        os.kill(relay, signal.SIGKILL)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    body = f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(120)"
    with capture(sys) as (_out, err):
        result = cells.cell(flags, body, expect_error=True)
    returned = time.time()
    thread.join()
    named = [w for line, w, _f in err.lines if "relay of node" in line]
    if result.success or not killed or not named:
        return "not named"
    return f"{(named[0] - killed[0]) * 1e3:.0f} ms ({(returned - killed[0]) * 1e3:.0f} ms)"


def measure(ip: Any, nodes: int, per_node: int, runs: int, tmp: Path) -> dict[str, str]:
    root = Path(tempfile.mkdtemp(prefix="jd-slurm-"))
    engine = ManyNodes(root, nodes)
    row: dict[str, str] = {}
    started: set[int] = set()
    flags = f"--nodes {nodes} --procs-per-node {per_node}"
    try:
        row["daemons up (N slurmd idle)"] = f"{engine.up():.1f} s"
        with engine.entered():
            cells = Cells(ip, "slurm")
            try:
                row["first cell (cold start → done)"] = f"{cells.cold(flags, engine):.2f} s"
                for _ in range(3):
                    cells.cell(flags, "pass")
                cpu0, trips = time.process_time(), []
                for _ in range(runs):
                    trips.append(cells.timed(lambda: cells.cell(flags, "pass")))
                cpu = (time.process_time() - cpu0) / runs
                row[f"warm trivial cell, median / p90 of {runs}"] = (
                    f"{median(trips) * 1e3:.0f} / {pct(trips, 90) * 1e3:.0f} ms"
                )
                row["kernel CPU per warm trivial cell"] = f"{cpu * 1e3:.1f} ms"
                cluster = cells.session.live["slurm"].cluster
                row["kernel peers / descriptors"] = (
                    f"{cluster.peer_count()} / {len(list(Path('/proc/self/fd').iterdir()))}"
                )
                row["relay killed mid-cell → named (→ cell returns)"] = (
                    dead_relay(cells, engine, flags, tmp)
                    if engine.handle.relay_pids()
                    else "— (no relays)"
                )
                cells.cold(flags, engine)
                stop = cells.timed(lambda: ip.run_line_magic("distributed", "stop"))
                t0 = time.perf_counter()
                while engine.handle.jobs() and time.perf_counter() - t0 < 60:
                    time.sleep(0.02)
                row["stop → returned (→ squeue empty)"] = (
                    f"{stop * 1e3:.0f} ms ({(stop + time.perf_counter() - t0) * 1e3:.0f} ms)"
                )
            finally:
                started = engine.everything()
                ip.run_line_magic("distributed", "stop")
    finally:
        engine.down()
        t0 = time.perf_counter()
        while (left := alive(started)) and time.perf_counter() - t0 < 20:
            time.sleep(0.05)
        shutil.rmtree(root, ignore_errors=True)
    if left:
        raise RuntimeError(f"processes left running: {sorted(left)}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", nargs="+", type=int, default=[16, 64])
    parser.add_argument("--per-node", type=int, default=1)
    parser.add_argument("--cells", type=int, default=20)
    parser.add_argument(
        "--relays", nargs="+", choices=["auto", "tree", "never"], default=["auto"],
        help="Distributed.relays: auto (a relay per node), tree (aggregators above them too), "
        "and/or never (every rank to the kernel)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args()
    from tests.python.engines import slurm

    if reason := slurm.missing():
        sys.exit(f"bench_slurm_nodes: {reason}")
    tmp = Path(tempfile.mkdtemp(prefix="jd-bench-slurm-"))
    ip = shell(tmp)
    ip.run_cell("%%distributed -n 1\npass")  # the session's first cell (its imports): not Slurm's
    ip.run_line_magic("distributed", "stop")
    began, load0 = time.monotonic(), os.getloadavg()[0]
    measured: dict[str, dict[str, str]] = {}  # column -> metric -> text
    try:
        for relays in args.relays:
            ip.run_line_magic("config", f"Distributed.relays = {relays!r}")
            for nodes in args.nodes:
                column = f"{nodes} nodes × {args.per_node}, relays {relays}"
                measured[column] = measure(ip, nodes, args.per_node, args.cells, tmp)
                for metric, text in measured[column].items():
                    print(f"{column}  {metric}: {text}", file=sys.stderr)
    finally:
        ip.run_line_magic("distributed", "stop")
        shutil.rmtree(tmp, ignore_errors=True)
    command = (
        f"python benchmarks/bench_slurm_nodes.py --nodes {' '.join(map(str, args.nodes))} "
        f"--per-node {args.per_node} --cells {args.cells} --relays {' '.join(args.relays)}"
    )
    note = (
        "Every slurmd, rank and relay shares this machine's cores: the times are a shape, "
        "not a claim (see the script's docstring)."
    )
    text = section(SECTION, command, began, load0, note, measured)
    print(text)
    write_section(args.out, text)


if __name__ == "__main__":
    main()
