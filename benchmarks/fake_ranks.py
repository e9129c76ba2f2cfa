"""Cheap ranks for ``bench_scale.py``: one process holds many, each speaking the real protocol.

``python fake_ranks.py FIRST STEP`` serves ranks FIRST, FIRST+STEP, ... of the world in the
bootstrap environment (``JUPYTER_DISTRIBUTED_BOOTSTRAP``, as a real rank gets it). Each rank,
like ``worker/__main__.py``: a ZeroMQ DEALER to the kernel's control channel (signed as ``rN``,
it sends ``Stage("setup")``), and its cell socket (signed as ``cN``: the Unix socket of
``protocol/packets.py`` where the kernel gives one, else a second DEALER) on which it says
``Hello`` and answers each ``Execute`` with ``Done(ok)`` at once, ``after`` its last control
message, its value ``"RANK: CODE (N pushed bytes)"`` (what reached it, for the tests); a cell
``None`` has no value (as a trivial cell), nor has ``fail R``, in which rank R ends in an error;
a cell ``control`` answers ``"RANK: control N"``, the control messages (pings) it was sent; a
cell ``hang`` is answered by rank 0 only, ``sleep`` by none: the others hold it until an
``Interrupt`` (then ``Done(interrupted)``), as ranks stuck in ``time.sleep`` would. A
``StackRequest`` is answered on the control channel with a rank's threads as a real rank's
``Stacks`` (the main thread in the cell's ``time.sleep`` while a cell is held, else waiting for
the next cell), so the kernel's hang diagnosis and the relays' grouping of alike stacks run.
Where the cluster has node relays (``bench_scale.py --mode relay``), both connections go to the
rank's node's relay, as a real rank's do. Nothing runs a cell; everything the kernel reads is
signed and framed by the project's own protocol code. Writes the time it began to connect to
``FIRST.start`` in ``$FAKE_DIR``.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import sys
import time
from pathlib import Path
from typing import Any

import zmq

from jupyter_distributed.errors import RankFailure
from jupyter_distributed.layout import Layout
from jupyter_distributed.pids import die_with_parent
from jupyter_distributed.protocol.commands import Execute, Interrupt, Shutdown, StackRequest
from jupyter_distributed.protocol.messages import parse
from jupyter_distributed.protocol.packets import RECORD, BadPacket, Reassembler, records
from jupyter_distributed.protocol.reports import Done, Hello, Stacks, Stage
from jupyter_distributed.protocol.signing import (
    BOOTSTRAP_ENV,
    BadMessage,
    Signer,
    cell_name,
    rank_name,
)
from jupyter_distributed.protocol.stacks import Frame, ThreadStack
from jupyter_distributed.worker.channel import dealer  # (the real rank's connection)


class FakeRank:
    def __init__(self, rank: int, boot: dict[str, Any], ctx: zmq.Context[Any], layout: Layout):
        key = bytes.fromhex(boot["key"])
        self.rank, self.ctl_signer, self.cell_signer = rank, Signer(key, rank_name(rank)), None
        self.cell_signer = Signer(key, cell_name(rank))
        address, cells, curve = boot["address"], boot.get("cells"), boot.get("curve")
        if boot.get("relays"):  # (as a real rank: both connections to its node's relay)
            address, cells, curve = boot["relays"][str(layout.coords(rank).node_rank)], None, None
        self.ctl = dealer(ctx, address, curve)
        self.unix: socket.socket | None = None
        self.cell_zmq: zmq.Socket[bytes] | None = None
        if cells:
            self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self.unix.connect(cells)
        else:
            self.cell_zmq = dealer(ctx, address, curve)
        self._in, self._buf = Reassembler(), bytearray(RECORD)
        self.control = 0  # control messages received (pings, read and dropped)
        self.held: str | None = None  # the run a hung cell holds (``hang``, ``sleep``)
        self.ctl.send_multipart(self.ctl_signer.pack(Stage("setup", os.getpid()).to_header()))
        coords = layout.coords(rank).to_json()
        self.send_cell(Hello(rank, socket.gethostname(), os.getpid(), "fake", coords))

    def send_cell(self, message: Any) -> None:
        header = {**message.to_header(), "after": self.ctl_signer.sent}
        frames = self.cell_signer.pack(header)
        if self.unix is not None:
            for record in records(frames):
                self.unix.sendmsg(record)
        else:
            assert self.cell_zmq is not None
            self.cell_zmq.send_multipart(frames)

    def cell_readable(self) -> bool:
        """Read what came on the cell socket; False once the kernel closed it or said stop."""
        if self.unix is not None:
            size = self.unix.recv_into(self._buf)
            if not size:
                return False
            try:
                frames = self._in.feed(memoryview(self._buf)[:size])
            except BadPacket:
                return True
            if frames is None:
                return True
        else:
            assert self.cell_zmq is not None
            frames = self.cell_zmq.recv_multipart()
        try:
            header, buffers = self.cell_signer.unpack(frames)
            message = parse(header)
        except BadMessage:
            return True
        if isinstance(message, Execute):
            done = self.answer(message, buffers)
            if done is None:
                self.held = message.run_id
            else:
                self.send_cell(done)
        return not isinstance(message, Shutdown)

    def control_readable(self) -> None:
        """A message on the control channel: a ping (counted), a stack request (answered), an
        interrupt (a held cell ends)."""
        self.control += 1
        try:
            header, _ = self.ctl_signer.unpack(self.ctl.recv_multipart())
            message = parse(header)
        except BadMessage:
            return
        if isinstance(message, StackRequest):
            stacks = Stacks(message.request_id, [t.to_json() for t in self.threads()], "cell")
            self.ctl.send_multipart(self.ctl_signer.pack(stacks.to_header()))
        elif isinstance(message, Interrupt) and self.held is not None:
            failure = RankFailure(self.rank, time.time(), socket.gethostname(), os.getpid(),
                                  "KeyboardInterrupt", "", kind="interrupted")  # fmt: skip
            self.send_cell(Done(self.held, "interrupted", failure=failure.to_json()))
            self.held = None

    def threads(self) -> list[ThreadStack]:
        """What a real rank's threads would say: in the cell's sleep, or waiting for a cell."""
        worker, runtime = "jupyter_distributed/worker/", "jupyter_distributed.worker.runtime"
        wait = [
            Frame(worker + "runtime.py", 158, "Runtime.serve", runtime,
                  "command, buffers = receive()"),
            Frame(worker + "cellsocket.py", 73, "CellSocket.recv",
                  "jupyter_distributed.worker.cellsocket", "frames = self._wire.recv()"),
        ]  # fmt: skip
        held = [
            Frame(worker + "runtime.py", 163, "Runtime.execute", runtime,
                  "self.execute(command, buffers, sync_output)"),
            Frame("<cell 1>", 3, "<module>", "", "time.sleep(60)"),
        ]  # fmt: skip
        return [ThreadStack("MainThread", True, tuple(held if self.held else wait))]

    def answer(self, message: Execute, buffers: list[Any]) -> Done | None:
        """Its value says what reached it (for the tests); a cell ``None`` has no value (a
        trivial cell), nor has ``fail R``, in which rank R fails."""
        code = message.code.strip()
        if code == "sleep" or (code == "hang" and self.rank != 0):
            return None
        if code == f"fail {self.rank}":
            failure = RankFailure(self.rank, time.time(), socket.gethostname(), os.getpid(),
                                  "ValueError", f"rank {self.rank} failed on purpose")  # fmt: skip
            return Done(message.run_id, "error", failure=failure.to_json())
        if code in ("None", "hang") or code.startswith("fail "):
            return Done(message.run_id, "ok")
        if code == "control":
            return Done(message.run_id, "ok", value=f"{self.rank}: control {self.control}")
        pushed = sum(len(memoryview(b)) for b in buffers)
        return Done(message.run_id, "ok", value=f"{self.rank}: {code} ({pushed} pushed bytes)")


def main() -> None:
    first, step = int(sys.argv[1]), int(sys.argv[2])
    die_with_parent()  # (a benchmark stopped by a timeout leaves no helper behind)
    boot = json.loads(os.environ[BOOTSTRAP_ENV])
    layout = Layout.from_json(boot["layout"])
    if os.environ.get("FAKE_WHOLE_NODES"):  # this helper's nodes, each node's ranks in turn
        per = layout.procs_per_node
        nodes = range(first, layout.world_size // per, step)
        owned = [r for n in nodes for r in range(n * per, (n + 1) * per)]
    else:  # every step-th rank
        owned = list(range(first, layout.world_size, step))
    mine = len(owned)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # ~4 descriptors a fake rank
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8 * mine + 64)), hard))
    ctx: zmq.Context[Any] = zmq.Context()
    ctx.set(zmq.MAX_SOCKETS, max(ctx.get(zmq.MAX_SOCKETS), 2 * mine + 16))  # (1,023 by default)
    Path(os.environ["FAKE_DIR"], f"{first}.start").write_text(repr(time.time()))
    ranks = [FakeRank(r, boot, ctx, layout) for r in owned]
    poller = zmq.Poller()  # (zmq_poll is poll(2): descriptors past 1024 are fine)
    by_key: dict[Any, FakeRank] = {}
    by_ctl: dict[Any, FakeRank] = {}
    for rank in ranks:
        poller.register(rank.ctl, zmq.POLLIN)
        by_ctl[rank.ctl] = rank
        cell_key: Any = rank.unix.fileno() if rank.unix is not None else rank.cell_zmq
        poller.register(cell_key, zmq.POLLIN)
        by_key[cell_key] = rank
    live = len(ranks)
    while live:
        stopped = []
        for key, _ in poller.poll(1000):
            if key in by_key:
                if not by_key[key].cell_readable():
                    stopped.append(key)
            else:
                by_ctl[key].control_readable()
        if stopped:  # (a new poller once per round: pyzmq's unregister is O(sockets) each)
            live -= len(stopped)
            gone = {*stopped, *(by_key[k].ctl for k in stopped)}
            kept = [k for k, _ in poller.sockets if k not in gone]
            poller = zmq.Poller()
            for key in kept:
                poller.register(key, zmq.POLLIN)
    os._exit(0)  # (as a stopped rank leaves: no teardown of thousands of sockets and objects)


if __name__ == "__main__":
    main()
