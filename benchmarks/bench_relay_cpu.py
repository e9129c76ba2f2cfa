"""One node's real relay, alone: its CPU per rank per trivial cell (issue 26).

A real relay process (``python -m jupyter_distributed.cluster.relay 0``, node 0 of a cluster of
``--nodes`` nodes of ``--ranks`` ranks each) between a kernel's ROUTER held here and its node's
ranks, which are ``fake_wire.py``'s ZMTP connections held here too (a rank's control channel and
cell socket each, their messages signed by the real ``Signer``). Each cell: the kernel's
``Execute`` signed once for every rank of the cluster (``pack_all``, as the kernel sends it),
each rank's ``Done`` (``ok``, no value: a trivial cell), and the relay's one reduction, checked
to hold every rank of the node (its ``ranges``). Prints the relay process's CPU (user + system,
every thread; and its main thread and ZeroMQ's I/O thread apart) per cell and per rank per cell,
over ``--cells`` cells after ``--warm`` unmeasured ones, for ``--rounds`` rounds.

``--error K``: the node's K-th rank ends each cell with an error, which the relay forwards at
once; the table adds how long it took from the rank's send to the kernel's socket (median and
max over the round), and how long the reduction took after the last rank's end was sent (both
wall times on shared cores: compare arms alternated, not absolute figures).

``--profile FILE``: the relay's main thread under cProfile with ``time.thread_time`` as its
clock (its CPU, not its waits), written to FILE as it leaves (after the ranks close), and its
top functions printed.

    PYTHONPATH=python python benchmarks/bench_relay_cpu.py [--ranks 125] [--cells 200]
        [--rounds 3] [--profile /tmp/relay.prof]

The run's own side (the kernel and the ranks here) shares the cores with the relay: its wall
is not the relay's; its CPU figures are.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import zmq  # noqa: E402
from fake_wire import ZmtpWire  # noqa: E402

from jupyter_distributed.cluster.relays import relay_addresses  # noqa: E402
from jupyter_distributed.layout import Layout  # noqa: E402
from jupyter_distributed.protocol.commands import Execute  # noqa: E402
from jupyter_distributed.protocol.reports import Done, Hello, Stage  # noqa: E402
from jupyter_distributed.protocol.signing import (  # noqa: E402
    BOOTSTRAP_ENV,
    KERNEL,
    Signer,
    cell_name,
    rank_name,
)

KEY = os.urandom(32)
PROFILED = (
    "import cProfile, runpy, sys, time\n"
    "p = cProfile.Profile(time.thread_time)\n"
    "sys.argv = ['relay', '0']\n"
    "p.enable()\n"
    "try:\n"
    "    runpy.run_module('jupyter_distributed.cluster.relay', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "finally:\n"
    "    p.disable()\n"
    "    p.dump_stats(sys.argv_out)\n"
)


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each of ``pid``'s threads, by name (the main thread: ``main``)."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue
        name = "main" if task.name == str(pid) else stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


class Node:
    """The kernel's ROUTER, node 0's real relay, and its ranks."""

    spread = 0.0  # (--spread: seconds between two ranks' ends)
    error = -1  # (--error: the rank of the node whose end is an error)

    def __init__(self, folder: Path, ranks: int, nodes: int, profile: str | None) -> None:
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.kernel = self.ctx.socket(zmq.ROUTER)
        self.kernel.bind(f"ipc://{folder}/ctl")
        relays = relay_addresses(folder, nodes)
        layout = Layout(nodes=nodes, procs_per_node=ranks)
        boot = {"address": f"ipc://{folder}/ctl", "key": KEY.hex(), "relays": relays,
                "layout": layout.to_json(), "ranges": 2}  # fmt: skip
        env = {**os.environ, BOOTSTRAP_ENV: json.dumps(boot)}
        command = [sys.executable, "-m", "jupyter_distributed.cluster.relay", "0"]
        if profile:
            code = PROFILED.replace("sys.argv_out", repr(profile))
            command = [sys.executable, "-c", code]
        self.relay = subprocess.Popen(command, env=env)  # noqa: S603 (the project's relay)
        self.signer = Signer(KEY, KERNEL)
        self.all = [cell_name(r) for r in range(ranks * nodes)]
        self.mine = range(ranks)
        self.ctl, self.cell, self.csign, self.rsign = [], [], [], []
        for r in self.mine:
            self.rsign.append(Signer(KEY, rank_name(r)))
            self.csign.append(Signer(KEY, cell_name(r)))
            self.ctl.append(ZmtpWire(relays["0"]))
            self.cell.append(ZmtpWire(relays["0"]))
        for r in self.mine:
            self.ctl[r].wait_ready()
            self.ctl[r].send(self.rsign[r].pack(Stage("setup", os.getpid()).to_header()))
            self.cell[r].wait_ready()
            coords = layout.coords(r).to_json()
            hello = Hello(r, "fake", os.getpid(), "fake", coords).to_header()
            self.cell[r].send(self.csign[r].pack({**hello, "after": self.rsign[r].sent}))
        self.route = b""
        self.error_s: list[float] = []  # each cell's error's latency (--error)
        self.reduced_s: list[float] = []  # each cell's reduction's, after the last end
        for _ in range(2 * len(self.mine)):  # (each rank's stage and hello, forwarded)
            self.route = self.kernel.recv_multipart()[0]

    def cell_once(self, run: int) -> None:
        """One trivial cell: the kernel's Execute, each rank's Done, the relay's reduction."""
        run_id = f"run-{run}"
        execute = Execute(run_id, "None").to_header()
        self.kernel.send_multipart([self.route, *self.signer.pack_all(execute, self.all)])
        done = Done(run_id, "ok").to_header()
        failed = {**Done(run_id, "error", {"kind": "exception"}).to_header()}
        for r in self.mine:
            wire = self.cell[r]
            while not wire.read():
                select.select([wire], [], [], 5.0)
            sent = time.perf_counter()
            wire.send(self.csign[r].pack({**(failed if r == self.error else done),
                                          "after": self.rsign[r].sent}))  # fmt: skip
            if r == self.error:
                header = json.loads(self.kernel.recv_multipart()[2])
                self.error_s.append(time.perf_counter() - sent)
                if header.get("type") != "done" or header.get("status") != "error":
                    raise RuntimeError(f"the error did not come first: {header}")
            if self.spread:
                time.sleep(self.spread)
        header = json.loads(self.kernel.recv_multipart()[2])
        self.reduced_s.append(time.perf_counter() - sent)
        ended = [[0, len(self.mine) - 1]]
        if 0 <= self.error < len(self.mine):
            ended = [s for s in ([0, self.error - 1], [self.error + 1, len(self.mine) - 1])
                     if s[0] <= s[1]]  # fmt: skip
        if header.get("type") != "dones" or header.get("ranges") != ended:
            raise RuntimeError(f"the relay's reduction did not name every rank: {header}")

    def close(self) -> None:
        for wire in (*self.ctl, *self.cell):
            wire.sock.close()
        self.relay.wait(30)
        self.ctx.destroy(linger=0)


def latency(seconds: list[float]) -> str:
    """``median / max`` in ms ("-" for none)."""
    if not seconds:
        return "-"
    return f"{statistics.median(seconds) * 1e3:.2f} / {max(seconds) * 1e3:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=125, help="ranks of the relay's node")
    parser.add_argument("--nodes", type=int, default=80, help="nodes of the cluster")
    parser.add_argument("--cells", type=int, default=200)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="cProfile the relay's main thread into this file")
    parser.add_argument(
        "--spread",
        type=float,
        default=0.0,
        help="µs between two ranks' ends (the relay then wakes for each, as when a node's "
        "ranks end one after the other; by default they come back to back)",
    )
    parser.add_argument(
        "--error",
        type=int,
        default=-1,
        help="the node's rank (0 ..) that ends each cell with an error (its latency is timed)",
    )
    args = parser.parse_args()
    Node.spread, Node.error = args.spread / 1e6, args.error
    print(
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; one relay, {args.ranks} ranks, "
        f"their ends {args.spread:g} µs apart"
    )
    print(
        "| round | relay CPU per cell | per rank per cell | main thread | ZeroMQ I/O | wall/cell "
        "| error's latency, median / max | reduction after the last end, median / max |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        node = Node(Path(folder), args.ranks, args.nodes, args.profile)
        run, per_rank = 0, []
        try:
            for i in range(args.rounds):
                for _ in range(args.warm):
                    run += 1
                    node.cell_once(run)
                node.error_s, node.reduced_s = [], []
                before, w0 = thread_cpu(node.relay.pid), time.perf_counter()
                for _ in range(args.cells):
                    run += 1
                    node.cell_once(run)
                after, wall = thread_cpu(node.relay.pid), time.perf_counter() - w0
                spent = {k: (v - before.get(k, 0.0)) / args.cells for k, v in after.items()}
                total = sum(spent.values())
                per_rank.append(total / args.ranks)
                io = sum(v for k, v in spent.items() if k.startswith("ZMQbg"))
                print(f"| {i + 1} | {total * 1e3:.2f} ms | {total / args.ranks * 1e6:.1f} µs | "
                      f"{spent.get('main', 0) * 1e3:.2f} ms | {io * 1e3:.2f} ms | "
                      f"{wall / args.cells * 1e3:.1f} ms | {latency(node.error_s)} | "
                      f"{latency(node.reduced_s)} |")  # fmt: skip
        finally:
            node.close()
    print(f"median per rank per cell: {statistics.median(per_rank) * 1e6:.1f} µs")
    if args.profile:
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
