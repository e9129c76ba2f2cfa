"""A node's real relay between a kernel's ROUTER and its ranks' DEALERs, driven from the
test's own process (:class:`Wire`, the ``wire`` fixture, registered in ``conftest.py``), and
what a relayed run left in the history."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import zmq

from jupyter_distributed.cluster.process import ProcessCluster
from jupyter_distributed.cluster.relays import RELAY_COMMAND, relay_addresses
from jupyter_distributed.cluster.router import Router
from jupyter_distributed.history.store import Store
from jupyter_distributed.layout import Layout
from jupyter_distributed.protocol.signing import (
    BOOTSTRAP_ENV,
    KERNEL,
    Signer,
    cell_name,
    rank_name,
)
from jupyter_distributed.session import Session

KEY = b"k" * 32
NODE_RANKS = (4, 5, 6, 7)  # node 1 of 2 nodes × 4


class Wire:
    """A kernel's ROUTER and node 1's ranks (DEALERs), with that node's real relay between."""

    def __init__(self, directory: Path, command: Sequence[str] = RELAY_COMMAND) -> None:
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.kernel = self.ctx.socket(zmq.ROUTER)
        self.kernel.bind(f"ipc://{directory}/ctl")
        relays = relay_addresses(directory, 2)
        boot = {
            "address": f"ipc://{directory}/ctl",
            "key": KEY.hex(),
            "relays": relays,
            "layout": Layout(nodes=2, procs_per_node=4).to_json(),
        }
        self.relay = subprocess.Popen(
            (*command, "1"), env={**os.environ, BOOTSTRAP_ENV: json.dumps(boot)}
        )
        self.ranks: dict[int, zmq.Socket[bytes]] = {}
        for r in NODE_RANKS:
            sock = self.ctx.socket(zmq.DEALER)
            sock.connect(relays["1"])
            self.ranks[r] = sock
        self.signer = Signer(KEY, KERNEL)

    def up(self, rank: int, signer: Signer | None = None) -> list[bytes]:
        """Rank ``rank`` sends a message; the frames it sent."""
        frames = [bytes(f) for f in (signer or Signer(KEY, rank_name(rank))).pack({"type": "x"})]
        self.ranks[rank].send_multipart(frames)
        return frames

    def cell_started(self) -> dict[int, Signer]:
        """Each rank's cell socket speaks first (the relay learns its connection), then cell
        ``r1`` reaches every rank; the cell sockets' signers."""
        signers = {r: Signer(KEY, cell_name(r)) for r in NODE_RANKS}
        relay = b""
        for r in NODE_RANKS:
            self.ranks[r].send_multipart([bytes(f) for f in signers[r].pack({"type": "x"})])
            got = self.at_kernel()
            assert got is not None
            relay = got[0]
        names = [cell_name(r) for r in range(8)]
        cell = self.signer.pack_all({"type": "execute", "run_id": "r1", "code": ""}, names)
        self.kernel.send_multipart([relay, *[bytes(f) for f in cell]])
        for r in NODE_RANKS:
            assert self.at_rank(r) is not None
        return signers

    def at_kernel(self, timeout: float = 5.0) -> list[bytes] | None:
        if not self.kernel.poll(int(timeout * 1000)):
            return None
        return self.kernel.recv_multipart()

    def at_rank(self, rank: int, timeout: float = 5.0) -> list[bytes] | None:
        if not self.ranks[rank].poll(int(timeout * 1000)):
            return None
        return self.ranks[rank].recv_multipart()

    def close(self) -> None:
        self.relay.kill()
        self.relay.wait()
        self.ctx.destroy(linger=0)


@pytest.fixture
def wire() -> Iterator[Wire]:
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        w = Wire(Path(directory))
        try:
            yield w
        finally:
            w.close()


def history_of(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """What the history holds of a run, each rank's events in order, without times."""
    out = []
    for _, e in store.events_after(0, run_id):
        if e.get("kind") == "output":
            out.append(("output", e["rank"], e["stream"], e["text"]))
        elif e.get("kind") == "rank":
            out.append(("rank", e["rank"], e.get("state"), e.get("value")))
    return sorted(out, key=lambda e: e[1])  # (stable: each rank's own order kept)


def router_of(session: Session) -> Router:
    (live,) = session.live.values()
    assert isinstance(live.cluster, ProcessCluster)
    return live.cluster.router
