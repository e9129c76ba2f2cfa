"""The floor under the kernel's CPU per trivial cluster cell (issue 26): ``bench_scale.py --floor``.

A cell magic, ``%%jd_bench_floor``, that does in the kernel only what any implementation must do
for a trivial cell on ``n`` ranks behind relays, on the main thread, with nothing else: one
signed header addressed to every rank sent to a peer process (the protocol's own ``Signer`` and
``dst`` encoding, the JSON kept per cluster as ours keeps it), one signed answer of the ranks'
ends checked, and the history's transaction of the rows a trivial cell writes (the run, a
``ranks`` row per node's span, the run's key and its three events) into a store of the
history's own schema. No view, no recorder, no thread hand-off, no liveness watch: what is left
above it in a real cell is ours to cut. The peer (``python cellfloor.py ADDRESS``) answers each
header with a reduction-sized signed message at once, or, with a ``hold`` (``Floor.hold``,
``bench_scale.py --floor-hold``), after keeping both CPUs busy over a buffer for that long, as a
cluster's ranks, relays and helpers keep the cores and their caches while a real cell runs:
the kernel then comes back to the answer in caches as cold as a real cell leaves them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import zmq

KEY = b"floor-key-of-32-bytes-0123456789"


class Floor:
    """The peer process, the kernel's socket and signer, and the store of one floor."""

    def __init__(self, folder: Path) -> None:
        from jupyter_distributed.history.storefile import statements
        from jupyter_distributed.protocol.signing import KERNEL, Signer

        folder.mkdir(parents=True, exist_ok=True)
        address = f"ipc://{folder}/peer"
        self.peer = subprocess.Popen([sys.executable, __file__, address])  # noqa: S603 (ours)
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.connect(address)
        self.signer = Signer(KEY, KERNEL)
        self.db = sqlite3.connect(folder / "floor.db", isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        for stmt in statements():
            self.db.execute(stmt)
        self.shape: tuple[int, int, str, list[tuple[int, int]]] = (0, 0, "", [])
        self.key = self.seq = 0
        self.hold = 0.0  # s the peer keeps the cores busy before it answers (see the module)

    def size(self, n: int, nodes: int) -> None:
        """The cluster the floor stands for: ``n`` ranks on ``nodes`` nodes (kept per cluster)."""
        from jupyter_distributed.protocol.receivers import encode

        per = max(1, n // nodes)
        spans = [(first, min(n, first + per) - 1) for first in range(0, n, per)]
        self.shape = (n, nodes, encode([f"r{r}" for r in range(n)]), spans)

    def cell(self, line: str, cell: str) -> None:
        """The magic: one cell's necessary work (see the module's text)."""
        n, _, dst, spans = self.shape
        run = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        started = time.time()
        fields = {"type": "execute", "run_id": run, "code": cell, "silent": True, "n": n}
        if self.hold:
            fields["hold"] = self.hold
        self.sock.send_multipart(self.signer.pack_all(fields, (), dst=dst))
        answer = self.signer.check(self.sock.recv_multipart())
        self.key += 1
        seq, ended = self.seq, time.time()
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        db.executemany(
            "INSERT INTO ranks (run_id, rank, host, pid, state, updated, last, set_id) "
            "VALUES (?,?,?,?,?,?,?,?)",
            [(run, first, "vm", None, "done", ended, last, 1) for first, last in spans],
        )
        db.execute(
            "INSERT INTO runs (id, cluster_id, backend, world_size, ranks, state, spec, source, "
            "started, ended) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (run, "c-floor", "local", n, json.dumps([[0, n - 1]]), "completed", "{}", cell,
             started, ended),
        )  # fmt: skip
        db.execute("INSERT OR IGNORE INTO run_keys (key, id) VALUES (?, ?)", (self.key, run))
        states = json.dumps(answer["spans"])
        db.executemany(
            "INSERT INTO events (seq, span, run, kind, t, data) VALUES (?,?,?,?,?,?)",
            [
                (seq + 1, 0, self.key, 1, started, json.dumps({"run_id": run, "state": "running"})),
                (seq + 2, n - 1, self.key, 2, ended, states),
                (seq + 3, 0, self.key, 1, ended, json.dumps({"run_id": run, "state": "completed"})),
            ],
        )
        db.execute("COMMIT")
        self.seq = seq + 3

    def close(self) -> None:
        self.sock.send_multipart(self.signer.pack_all({"type": "bye"}, (), dst='"a0"'))
        try:
            self.peer.wait(5)
        except subprocess.TimeoutExpired:
            self.peer.kill()
            self.peer.wait()
        self.sock.close(linger=0)
        self.db.close()


def register(ip: Any, folder: Path) -> Floor:
    floor = Floor(folder)
    ip.register_magic_function(floor.cell, "cell", "jd_bench_floor")
    return floor


def burn(seconds: float) -> None:
    """Keep both CPUs busy for ``seconds``, each process writing over 16 MiB of its own (a
    forked child beside this one): the caches are left as other work leaves them."""
    if seconds <= 0:
        return
    child = os.fork()
    deadline, buffer, at, step = time.monotonic() + seconds, bytearray(16 << 20), 0, 1 << 18
    while time.monotonic() < deadline:  # (a look every 256 KiB written: ~0.5 ms)
        for i in range(at, at + step, 64):
            buffer[i] = (buffer[i] + 1) & 0xFF
        at = (at + step) % len(buffer)
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)


def peer(address: str) -> None:
    """Answer each signed header with a signed end of every rank (a root reduction's size)."""
    from jupyter_distributed.protocol.signing import Signer

    signer, sock = Signer(KEY, "a0"), zmq.Context.instance().socket(zmq.ROUTER)
    sock.bind(address)
    while True:
        who, *frames = sock.recv_multipart()
        header = signer.check(frames)
        if header["type"] == "bye":
            return
        burn(header.get("hold", 0.0))
        spans = [{"first": 0, "last": header["n"] - 1, "states": ["running", "done"], "host": "vm"}]
        answer = {"type": "ended", "run_id": header["run_id"], "spans": spans, "slowest": 0.003}
        sock.send_multipart([who, *signer.pack(answer)])


if __name__ == "__main__":
    peer(sys.argv[1])
