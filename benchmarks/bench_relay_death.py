"""How long a node relay holds its living ranks' ends of a cell after the rank it still awaits
died, and an aggregator its living nodes' after a relay it awaits died (issue 26).

    PYTHONPATH=python python benchmarks/bench_relay_death.py [--cells 10] [--aggregator]

A real relay process (node 1 of 2 nodes × 4 ranks, the relay of the ``PYTHONPATH`` checkout,
with its real hold) between this process's kernel ROUTER and four ranks' DEALERs. Per cell:
ranks 4-6 end it, then rank 7's connection closes (a rank that died mid-cell: a process that
ends closes its sockets so); a fresh rank 7 connects for the next cell. Prints, per cell and as
medians, the milliseconds from the close to the relay's reduction of the three ends at the
kernel, and from the last end sent. The relay that awaits a dead rank until its hold is over
(0.5 s after the last end, up to 2 s) shows the hold; one that sees the close, milliseconds.

``--aggregator``: the real aggregator 0 (nodes 0-1 of 4 × 2 ranks) between the kernel's ROUTER
and two DEALERs in its relays' place (the test suite's ``Tree``); per cell, node 0's relay sends
its reduction, then node 1's relay's connection closes; the same two figures, to the merged
reduction at the kernel.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import zmq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))  # tests.python.relay_helpers
from common import use_checkout  # noqa: E402

use_checkout()

from tests.python.relay_helpers import KEY, NODE_RANKS, Wire  # noqa: E402
from tests.python.test_aggregators import Tree  # noqa: E402

from jupyter_distributed.cluster import fanin, hopnames  # noqa: E402
from jupyter_distributed.cluster.relays import relay_addresses  # noqa: E402
from jupyter_distributed.protocol.signing import Signer, cell_name  # noqa: E402


def _recv(sock: zmq.Socket[bytes]) -> list[bytes]:
    if not sock.poll(10_000):
        raise SystemExit("nothing came within 10 s: the relay is stuck")
    return sock.recv_multipart()


def measure(cells: int, directory: Path) -> list[tuple[float, float]]:
    """(ms from the close, ms from the last end) to the reduction, per cell."""
    wire = Wire(directory)  # (the real relay process, the kernel's ROUTER, the ranks' DEALERs)
    signers = {r: Signer(KEY, cell_name(r)) for r in NODE_RANKS}
    *living, dying = NODE_RANKS
    out = []
    try:
        for cell in range(cells):
            for r in NODE_RANKS:  # (each cell socket speaks first: its connection known)
                if r not in wire.ranks:  # (a fresh rank 7 after the last cell's died)
                    wire.ranks[r] = wire.ctx.socket(zmq.DEALER)
                    wire.ranks[r].connect(relay_addresses(directory, 2)["1"])
                wire.ranks[r].send_multipart(signers[r].pack({"type": "hello"}))
                route = _recv(wire.kernel)[0]
            run, names = f"r{cell}", [cell_name(r) for r in range(8)]
            execute = wire.signer.pack_all({"type": "execute", "run_id": run, "code": ""}, names)
            wire.kernel.send_multipart([route, *execute])
            for r in NODE_RANKS:
                _recv(wire.ranks[r])
            for r in living:
                done = {"type": "done", "run_id": run, "status": "ok", "after": 0}
                wire.ranks[r].send_multipart(signers[r].pack(done))
            last = time.perf_counter()
            time.sleep(0.05)  # (the ends are at the relay, held)
            closed = time.perf_counter()
            wire.ranks.pop(dying).close(linger=0)
            header, _ = wire.signer.unpack(_recv(wire.kernel)[1:])
            now = time.perf_counter()
            assert header["type"] == "dones" and header["done"] == 3, header
            out.append(((now - closed) * 1000, (now - last) * 1000))
    finally:
        wire.close()
    return out


def measure_aggregator(cells: int) -> list[tuple[float, float]]:
    """The same two figures for an aggregator whose node 1 relay dies mid-cell (a fresh
    aggregator per cell: its relays' DEALERs are the test suite's)."""
    out = []
    for _ in range(cells):
        with tempfile.TemporaryDirectory(dir="/tmp") as directory:
            tree = Tree(Path(directory))
            try:
                tree.cell_started()
                reduction = {
                    "type": fanin.REDUCED, "run_id": "x", "done": 2, "of": 2,
                    "statuses": {"ok": 2}, "errors": 0, "slowest_rank": 0, "slowest_ms": 1.0,
                    "each": [], "ranges": [[0, 1]],
                }  # fmt: skip
                tree.relays[0].send_multipart(Signer(KEY, hopnames.relay_name(0)).pack(reduction))
                last = time.perf_counter()
                time.sleep(0.05)  # (node 0's ends are at the aggregator, held)
                closed = time.perf_counter()
                tree.relays.pop(1).close(linger=0)
                header, _ = tree.signer.unpack(_recv(tree.kernel)[1:])
                now = time.perf_counter()
                assert header["type"] == fanin.REDUCED and header["done"] == 2, header
                out.append(((now - closed) * 1000, (now - last) * 1000))
            finally:
                tree.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=10)
    parser.add_argument("--aggregator", action="store_true", help="a relay dies below one")
    args = parser.parse_args()
    if args.aggregator:
        rows = measure_aggregator(args.cells)
    else:
        with tempfile.TemporaryDirectory(dir="/tmp") as directory:
            rows = measure(args.cells, Path(directory))
    print(f"{'cell':>4}  {'close->reduction ms':>20}  {'last end->reduction ms':>22}")
    for i, (close, last) in enumerate(rows):
        print(f"{i:>4}  {close:>20.1f}  {last:>22.1f}")
    close_ms = statistics.median(r[0] for r in rows)
    last_ms = statistics.median(r[1] for r in rows)
    print(f"median  {close_ms:>18.1f}  {last_ms:>22.1f}")


if __name__ == "__main__":
    main()
