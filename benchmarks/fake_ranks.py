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
``FIRST.start`` in ``$FAKE_DIR``, and as it leaves, to ``FIRST.answered``, how many cells its
ranks got in all (each rank's every ``Execute``: the bench checks that each cell reached each rank).

Cheap, as a rank on another host costs the kernel nothing (issue 26): the helper's connections
are ``fake_wire.py``'s (ZMTP spoken over a plain Unix socket where the rank's end is a DEALER on
``ipc://``, no ZeroMQ I/O thread), read through one ``epoll``; a message that many of its ranks
get as the same bytes (a cell signed once for all) is verified once for all of them
(:class:`Shared`), each rank still checking that it is named and its counter; a trivial cell's
``Done`` fields are made once per cell and each rank's end signed with its own counter and
``after`` by the real ``Signer``.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import socket
import sys
import time
from pathlib import Path
from typing import Any

import zmq
from fake_wire import SeqpacketWire, ZmqWire, connect

from jupyter_distributed.errors import RankFailure
from jupyter_distributed.layout import Layout
from jupyter_distributed.pids import die_with_parent
from jupyter_distributed.protocol.commands import Execute, Interrupt, Shutdown, StackRequest
from jupyter_distributed.protocol.messages import parse
from jupyter_distributed.protocol.receivers import Receivers
from jupyter_distributed.protocol.reports import Done, Hello, Stacks, Stage
from jupyter_distributed.protocol.signing import (
    BOOTSTRAP_ENV,
    BadMessage,
    Signer,
    cell_name,
    rank_name,
)
from jupyter_distributed.protocol.stacks import Frame, ThreadStack


class Shared:
    """What a helper verified once for all its fakes: the last message several of them got as
    the same bytes (a cell or a stack request signed once for all, which their relays forward
    unchanged). Its signature is checked once (the real ``Signer.unpack``); each fake that gets
    the same bytes again still checks that the message names it and that its counter is above
    the last it took (``Signer.vouched``), as its own ``unpack`` would."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.header: dict[str, Any] = {}
        self.message: Any = None
        self.receivers = Receivers([])
        self.plain: dict[str, Any] | None = None  # the message's Done(ok) fields, made once

    def unpack(self, signer: Signer, frames: list[bytes]) -> tuple[Any, list[bytes]]:
        if len(frames) == 2 and frames == self.frames:
            dst, src, seq = self.header["dst"], self.header["src"], int(self.header["seq"])
            if dst != signer.me and signer.me not in self.receivers:
                raise BadMessage(f"a message from {src} to {dst!r} reached {signer.me}")
            if not signer.vouched(src, seq):
                raise BadMessage(f"replayed message {src}#{seq}")
            return self.message, []
        header, buffers = signer.unpack(frames)
        message = parse(header)
        if not buffers:
            self.frames, self.header, self.message = frames, header, message
            self.receivers, self.plain = Receivers(header["dst"]), None
        return message, [bytes(b) for b in buffers]


class FakeRank:
    def __init__(
        self, rank: int, boot: dict[str, Any], ctx: zmq.Context[Any], layout: Layout, shared: Shared
    ) -> None:
        key = bytes.fromhex(boot["key"])
        self.rank, self.shared = rank, shared
        self.ctl_signer, self.cell_signer = (
            Signer(key, rank_name(rank)),
            Signer(key, cell_name(rank)),
        )
        address, cells, curve = boot["address"], boot.get("cells"), boot.get("curve")
        if boot.get("relays"):  # (as a real rank: both connections to its node's relay)
            address, cells, curve = boot["relays"][str(layout.coords(rank).node_rank)], None, None
        self.ctl = connect(ctx, address, curve)
        self.cell = SeqpacketWire(cells) if cells else connect(ctx, address, curve)
        self.control = 0  # control messages received (pings, read and dropped)
        self.executes = 0  # cells received
        self.held: str | None = None  # the run a hung cell holds (``hang``, ``sleep``)
        self.stopped = False  # its cell socket said stop
        self.coords = layout.coords(rank).to_json()

    def start(self) -> None:
        """Once both connections are up: ``Stage("setup")`` and ``Hello``, as a real rank."""
        self.ctl.wait_ready()
        self.ctl.send(self.ctl_signer.pack(Stage("setup", os.getpid()).to_header()))
        self.cell.wait_ready()
        hello = Hello(self.rank, socket.gethostname(), os.getpid(), "fake", self.coords)
        self.send_cell(hello.to_header())

    def send_cell(self, fields: dict[str, Any]) -> None:
        self.cell.send(self.cell_signer.pack({**fields, "after": self.ctl_signer.sent}))

    def cell_message(self, frames: list[bytes]) -> bool:
        """A message on the cell socket; False once the kernel said stop."""
        try:
            message, buffers = self.shared.unpack(self.cell_signer, frames)
        except BadMessage:
            return True
        if isinstance(message, Execute):
            self.executes += 1
            done = self.answer(message, buffers)
            if done is None:
                self.held = message.run_id
            else:
                self.send_cell(done)
        return not isinstance(message, Shutdown)

    def control_message(self, frames: list[bytes]) -> None:
        """A message on the control channel: a ping (counted), a stack request (answered), an
        interrupt (a held cell ends)."""
        self.control += 1
        try:
            message, _ = self.shared.unpack(self.ctl_signer, frames)
        except BadMessage:
            return
        if isinstance(message, StackRequest):
            stacks = Stacks(message.request_id, [t.to_json() for t in self.threads()], "cell")
            self.ctl.send(self.ctl_signer.pack(stacks.to_header()))
        elif isinstance(message, Interrupt) and self.held is not None:
            failure = RankFailure(self.rank, time.time(), socket.gethostname(), os.getpid(),
                                  "KeyboardInterrupt", "", kind="interrupted")  # fmt: skip
            self.send_cell(Done(self.held, "interrupted", failure=failure.to_json()).to_header())
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

    def answer(self, message: Execute, buffers: list[bytes]) -> dict[str, Any] | None:
        """Its ``Done``'s fields (None: it holds the cell). Its value says what reached it (for
        the tests); a cell ``None`` has no value (a trivial cell), nor has ``fail R``, in which
        rank R fails: those fields are the same for every rank, made once per cell."""
        code = message.code.strip()
        if code == "sleep" or (code == "hang" and self.rank != 0):
            return None
        if code == f"fail {self.rank}":
            failure = RankFailure(self.rank, time.time(), socket.gethostname(), os.getpid(),
                                  "ValueError", f"rank {self.rank} failed on purpose")  # fmt: skip
            return Done(message.run_id, "error", failure=failure.to_json()).to_header()
        if code in ("None", "hang") or code.startswith("fail "):
            if message is not self.shared.message:
                return Done(message.run_id, "ok").to_header()
            if self.shared.plain is None:
                self.shared.plain = Done(message.run_id, "ok").to_header()
            return self.shared.plain
        if code == "control":
            done = Done(message.run_id, "ok", value=f"{self.rank}: control {self.control}")
            return done.to_header()
        pushed = sum(len(b) for b in buffers)
        value = f"{self.rank}: {code} ({pushed} pushed bytes)"
        return Done(message.run_id, "ok", value=value).to_header()


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
    folder = Path(os.environ["FAKE_DIR"])
    (folder / f"{first}.start").write_text(repr(time.time()))
    shared = Shared()
    ranks = [FakeRank(r, boot, ctx, layout, shared) for r in owned]
    for rank in ranks:  # (every connection dialled first, then each one's handshake awaited)
        rank.start()
    serve(ranks)
    (folder / f"{first}.answered").write_text(str(sum(r.executes for r in ranks)))
    os._exit(0)  # (as a stopped rank leaves: no teardown of thousands of sockets and objects)


def serve(ranks: list[FakeRank]) -> None:
    """Answer what comes on the ranks' connections until each rank's cell socket said stop."""
    poll = select.epoll()
    by_fd: dict[int, tuple[FakeRank, bool]] = {}  # descriptor -> (its rank, its cell socket?)
    for rank in ranks:
        for wire, cell in ((rank.cell, True), (rank.ctl, False)):
            by_fd[wire.fileno()] = (rank, cell)
            poll.register(wire.fileno(), select.EPOLLIN)
    # (a ZeroMQ socket's descriptor may miss a message that a send of its own took in: read
    # those again after each round)
    zmq_wires = [
        (r, w, w is r.cell) for r in ranks for w in (r.cell, r.ctl) if isinstance(w, ZmqWire)
    ]
    live = len(ranks)
    while live:
        ready = [by_fd[fd] for fd, _ in poll.poll(1.0)]
        ready += [
            (r, cell)
            for r, w, cell in zmq_wires
            if not r.stopped and w.sock.get(zmq.EVENTS) & zmq.POLLIN
        ]
        for rank, cell in ready:
            if rank.stopped:
                continue
            wire = rank.cell if cell else rank.ctl
            messages = wire.read()
            if messages is None:  # (closed: its relay is gone; a real rank would dial again)
                poll.unregister(wire.fileno())
                del by_fd[wire.fileno()]
                continue
            for frames in messages:
                if cell and not rank.cell_message(frames):
                    rank.stopped = True
                elif not cell:
                    rank.control_message(frames)
            if rank.stopped:
                live -= 1
                for w in (rank.cell, rank.ctl):
                    if w.fileno() in by_fd:
                        del by_fd[w.fileno()]
                        with contextlib.suppress(OSError, ValueError):
                            poll.unregister(w.fileno())


if __name__ == "__main__":
    main()
