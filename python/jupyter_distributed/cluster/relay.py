"""A node's relay: one process beside the node's ranks, never one of them, between them and the
kernel (``python -m jupyter_distributed.cluster.relay NODE``, started by the backend with the
cluster's bootstrap environment).

Its ranks connect their control channels and cell sockets to its ROUTER (a Unix socket in the
kernel's directory of mode 0700, the bootstrap's ``relays[NODE]``; across hosts, one in a
directory of mode 0700 it makes on its node) instead of the kernel's; it
holds one connection upward, a DEALER to the kernel's ROUTER (CurveZMQ across hosts, with the
ranks' keys). So the kernel holds one connection per node, not two per rank.

- **Down:** a message from the kernel is verified (signature and counter: the relay holds the
  cluster's key, as a rank does) and forwarded unchanged: to the rank its ``dst`` names, or,
  for a message signed once for many ranks (its ``dst`` a list, see
  :meth:`~..protocol.signing.Signer.pack_all`), to each of this node's ranks on the list.
- **Up:** a rank's message is verified the same way and forwarded unchanged (the kernel
  verifies it again and knows the rank by its signed ``src``); which connection a rank's
  ``rN`` and ``cN`` are, the relay learns from their verified messages, as the kernel does.

- **Fan-in:** its ranks' ends of a cell are answered in one message the relay signs itself
  (:mod:`.fanin`); an error is forwarded at once. Their output goes up in batches it signs
  itself too, each rank's lines in order (:mod:`.fanbatch`); lines and stack dumps that
  several ranks sent alike go up once, with each rank's name and counter (:mod:`.fancollapse`).
  After a wake-up that only held ends, a relay of many ranks waits a millisecond before it
  looks below again, so that its ranks' ends are taken a few at a time (:mod:`.relaypace`).

A rank whose connections close (it died) is awaited no more: the ends its node's other ranks
sent go up at once once they are all in, not after the hold (its death is the launcher's to
report, as before).

Anything unsigned, replayed, or from a rank of another node is dropped. The relay dies with
its parent (Linux), ends once it finds the kernel dead (on the kernel's host, as a rank
does), and leaves on its own (exit 0) once every rank of its node has spoken and none is
connected any more (:mod:`.hoplife`); the kernel names a dead relay as a dead node
(:mod:`.relays`), not one that left after its ranks.
"""

from __future__ import annotations

import math
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq

from ..layout import Layout
from ..pids import pid_alive
from ..protocol.frames import MAX_FRAME, MAX_HEADER
from ..protocol.signing import BadMessage, Signer, cell_name, rank_name
from .aggregators import upward
from .fanin import Reducer
from .hopframes import send, take
from .hoplife import Connections
from .hopnames import relay_name
from .hoprun import run
from .nodedirs import listen_directory, node_ranks
from .relaybatch import Batcher
from .relaydsts import ByDst
from .relaypace import RelayPace

ORPHAN_CHECK_MS = 1000  # how often a relay looks whether its kernel is alive (on its host)
RELAY_NAME = "relay"  # the name its checking signers go by (it signs as relay_name(node))


class Hop:
    """What a relay and an aggregator (:mod:`.aggregator`) share: a ROUTER below (bound at
    ``below``), a DEALER above (dialled at ``above``, with ``curve``'s keys where given), and
    the loop that forwards both ways what it verified with the cluster's key (its checking
    signers go by ``name``): from below only what ``names`` (its ranks', or relays') sent, each
    sender's connection learned from its verified messages; from above to the connections of
    the receivers its ``dst`` names (once each)."""

    names: set[str]  # whose messages it takes from below
    awaited: set[str]  # who must have spoken before it leaves once no one is below (.hoplife)

    def __init__(self, boot: dict[str, Any], below: str, above: str, curve: Any, name: str) -> None:
        key = bytes.fromhex(boot["key"])
        self._down_signer = Signer(key, name)  # counters of what comes from below
        self._up_signer = Signer(key, name)  # counters of the kernel's messages
        self._routes: dict[str, bytes] = {}  # "r3"/"c3"/"n0" -> its connection's routing id
        self._fds: dict[str, int] = {}  # ... -> its connection's file descriptor (.hoplife)
        # the connections a dst names, read once per dst until a route changes (.relaydsts)
        self._peers = ByDst(lambda dst: list({self._routes[n] for n in dst.among(self._routes)}))
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.down = self.ctx.socket(zmq.ROUTER)
        self.down.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME + MAX_HEADER)
        self.up = self.ctx.socket(zmq.DEALER)
        if curve:
            self.up.setsockopt(zmq.CURVE_SERVERKEY, curve["server"].encode())
            self.up.setsockopt(zmq.CURVE_PUBLICKEY, curve["public"].encode())
            self.up.setsockopt(zmq.CURVE_SECRETKEY, curve["secret"].encode())
        for sock in (self.down, self.up):
            for opt in (zmq.SNDHWM, zmq.RCVHWM):
                sock.setsockopt(opt, 0)
            sock.setsockopt(zmq.LINGER, 1000)
        self._stops: list[Callable[[], None]] = []  # (an aggregator's authenticator)
        self.directory = self._bind_below(below, boot)
        self.below = Connections(self.down)
        self.up.connect(above)
        here = boot.get("kernel_host") == socket.gethostname()
        self.kernel_pid = int(boot.get("kernel_pid") or 0) if here else 0

    def _bind_below(self, below: str, boot: dict[str, Any]) -> Path | None:
        """Bind the ROUTER below; the directory made for it (a node-local one, mode 0700)."""
        directory = listen_directory(below)
        self.down.bind(below)
        return directory

    def serve(self) -> None:
        """Forward both ways until killed, until the kernel is found dead (on its host), or
        until everyone below has left (:mod:`.hoplife`)."""
        poller = zmq.Poller()
        poller.register(self.down, zmq.POLLIN)
        poller.register(self.up, zmq.POLLIN)
        poller.register(self.below.socket, zmq.POLLIN)
        above = zmq.Poller()  # (what ends a pause: a message from above, .relaypace)
        above.register(self.up, zmq.POLLIN)
        checked, wait = time.monotonic(), None
        while True:
            due = ORPHAN_CHECK_MS if wait is None else int(wait * 1000) + 1
            looked = time.monotonic()
            ready = dict(poller.poll(min(ORPHAN_CHECK_MS, due)))
            slept = time.monotonic() - looked
            if self.kernel_pid and time.monotonic() - checked >= ORPHAN_CHECK_MS / 1000:
                checked = time.monotonic()
                if not pid_alive(self.kernel_pid):
                    return  # the kernel is gone (killed): nobody is left to relay for
            if self.down in ready:
                self._from_below()
            if self.up in ready:
                self._from_above()
            if self.below.socket in ready:
                self._closed(self.below.closed())
            wait = self._reduce()
            if self.below.socket in ready and self._everyone_left():
                self._leave()
                return
            if pause := self._pause(wait, slept):
                above.poll(math.ceil(pause * 1000))

    def _closed(self, fds: list[int]) -> None:
        """Connections from below closed: what they sent first is taken, then who sent over
        them is :meth:`_lost`."""
        if not fds:
            return
        self._from_below()
        gone = {name for name, fd in self._fds.items() if fd in fds}
        for name in gone:
            del self._fds[name]
        if gone:
            self._lost(gone)

    def _lost(self, names: set[str]) -> None:
        """The connections of ``names`` (verified senders below) closed: they are gone."""

    def _everyone_left(self) -> bool:
        return self.below.none_open() and self.awaited <= self._routes.keys()

    def _leave(self) -> None:
        """What came from below and what is held go up (a second at most), then it ends."""
        self._from_below()
        self._flush()
        for stop in self._stops:
            stop()
        self.ctx.destroy(linger=1000)

    def _flush(self) -> None:
        """Send what it holds now (as it leaves)."""

    def _from_below(self) -> None:
        while (frames := take(self.down)) is not None:
            peer, message = frames[0].bytes, frames[1:]
            try:
                header = self._down_signer.check([f.buffer for f in message])
            except BadMessage:
                continue
            src = str(header["src"])
            if src not in self.names:
                continue  # (a rank of another node signs as itself: not through this hop)
            if self._routes.get(src) != peer:
                self._routes[src] = peer
                self._fds[src] = frames[1].get(zmq.SRCFD)  # (its close names it, .hoplife)
                self._peers.clear()
            self._up(message, header, src)

    def _from_above(self) -> None:
        while (message := take(self.up)) is not None:
            try:
                header = self._up_signer.check([f.buffer for f in message])
            except BadMessage:
                continue
            self._down(message, header)

    def _up(self, message: list[zmq.Frame], header: dict[str, Any], src: str) -> None:
        """A verified message from below, of ``src``: forwarded unchanged."""
        send(self.up, message)

    def _down(self, message: list[zmq.Frame], header: dict[str, Any]) -> None:
        """A verified message from above: forwarded unchanged to each connection it names."""
        for peer in self._peers.get(header["dst"]):
            send(self.down, [peer, *message])

    def _reduce(self) -> float | None:
        """What is due upward now; in how many seconds the next is (None: nothing waits)."""
        return None

    def _pause(self, due: float | None, slept: float) -> float:
        """Seconds to wait for a message from above only, before it looks below again
        (``slept``: how long its last look waited)."""
        return 0.0


class Relay(Hop):
    def __init__(self, boot: dict[str, Any], node: int) -> None:
        self.ranks = node_ranks(Layout.from_json(boot["layout"]), node, boot.get("relay_of"))
        self.awaited = {rank_name(r) for r in self.ranks}
        self.names = self.awaited | {cell_name(r) for r in self.ranks}
        above, curve = upward(boot, node)  # the kernel, or its node's aggregator
        super().__init__(boot, boot["relays"][str(node)], above, curve, RELAY_NAME)
        # what it writes itself (reductions, batches)
        self._signer = Signer(bytes.fromhex(boot["key"]), relay_name(node))
        ranges = self._down_signer.accepted if boot.get("ranges") else None  # (the kernel's)
        self._reducer = Reducer(self.ranks, accepted=ranges, seqs=boot.get("ranges") == 1)
        self._batcher = Batcher(self.ranks)
        self.pace = RelayPace(self._reducer.awaited)

    def _reduce(self) -> float | None:
        """Send the batch and the reductions that are due; in how many seconds the next is."""
        now, batch_wait = self._batcher.due()
        reduced, wait = self._reducer.due()
        if now or reduced:  # (a rank's lines before its end)
            self._send_batch()
            batch_wait = None
        waits = [w for w in (wait, batch_wait) if w is not None]
        for fields in reduced:
            send(self.up, self._signer.pack(fields))
        return min(waits) if waits else None

    def _pause(self, due: float | None, slept: float) -> float:
        return self.pace.pause(due, slept)

    def _flush(self) -> None:
        self._send_batch()

    def _lost(self, names: set[str]) -> None:
        """Ranks whose connection closed (dead): their ends are awaited no more."""
        ranks = {int(name[1:]) for name in names}
        self._send_batch()  # (their last lines, held here: up now, before the kernel moves on)
        self.pace.other()
        self._reducer.gone(ranks)
        self._batcher.alike.gone(ranks)

    def _send_batch(self) -> None:
        fields = self._batcher.take()
        if fields is not None:
            send(self.up, self._signer.pack(fields))

    def _up(self, message: list[zmq.Frame], header: dict[str, Any], src: str) -> None:
        self._batcher.alike.seen(header)
        if self._reducer.hold(header, len(message) - 2):
            self.pace.held()
            return
        self.pace.other()
        if self._batcher.keep(header, len(message) - 2, len(message[1])):
            return
        if self._batcher.holds(src):
            self._send_batch()  # (what this rank sent before this goes first)
        send(self.up, message)

    def _down(self, message: list[zmq.Frame], header: dict[str, Any]) -> None:
        self.pace.other()
        self._reducer.sent(header)
        self._batcher.alike.sent(header)
        super()._down(message, header)


def main(argv: list[str]) -> int:
    """``NODE``: the node's number, or the name of the environment variable that holds it (a
    launcher's process rank, e.g. ``OMPI_COMM_WORLD_RANK`` where it starts one per node)."""
    return run(argv, Relay, "relay NODE", "relay of node")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
