"""How a message leaves the kernel for some ranks: signed once per rank (its buffers hashed
once for all), or once for all through their relays (who gets it is :mod:`.routes`' business).
What goes to a rank's cell socket is written from the sending thread at once; the rest is
queued for the I/O thread, woken once for all. A cell written to every rank directly wakes it
only where it rests between cells (:attr:`Outbox.wake_cells`): its answers wake it otherwise.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ..ioloop import IoLoop
from ..protocol.commands import MAIN_THREAD, Execute, Ping
from ..protocol.header import Message
from ..protocol.signing import Buffer, Signer, digest
from .cellpeers import CellPeer
from .cellrun import CellRun
from .intake import Intake
from .routes import Routes


class Outbox:
    """The kernel's sending end, used from any thread (the router's ``send``)."""

    def __init__(self, loop: IoLoop, signer: Signer, intake: Intake, cell: CellRun) -> None:
        self._loop, self._signer, self._intake, self._cell = loop, signer, intake, cell
        self._lock = threading.Lock()
        self._routes = Routes()  # (sending threads, under _lock's caller) who gets a cell
        # a cell written to every rank's cell socket wakes the I/O thread too: set where its
        # pace between cells is slow (see Router.pace), so that it starts the run (the pace
        # of a running cell, its record by RECORD_AFTER) at once, not at its next tick
        self.wake_cells = False

    def send(self, ranks: Sequence[int], message: Message, buffers: Sequence[Buffer] = ()) -> None:
        """Sign ``message`` once per rank (its buffers hashed once for all) and queue it. A rank
        that has not been heard from yet has no connection to send on: it is skipped."""
        header = message.to_header()
        digests = [digest(b) for b in buffers]
        main = isinstance(message, MAIN_THREAD)
        peers, names, shared, reached = self._routes.of(ranks, main, self._intake)
        if isinstance(message, Execute):  # (before the cell leaves: its answers are awaited)
            sent = self._routes.awaited(reached, main)
            self._loop.call(lambda: self._cell.sent_to(sent), wake=False)
        direct: list[tuple[CellPeer, list[Buffer]]] = []
        locked: dict[CellPeer, None] = {}
        with self._lock:  # counters leave in order, whichever thread sends
            if shared:  # through relays: signed once for all, one message per relay
                dst = self._routes.dst(names, main)
                once = self._signer.pack_all(header, names, buffers, digests, dst)
                for relay in shared:
                    self._loop.put([relay, *once], wake=False)
                peers = []
            signed = self._signer.pack_each(header, names, buffers, digests) if peers else []
            for (_, peer), frames in zip(peers, signed, strict=True):
                if isinstance(peer, CellPeer):
                    direct.append((peer, frames))
                else:
                    self._loop.put([peer, *frames], wake=False)
            for peer in dict.fromkeys(p for p, _ in direct):  # (the next sender's turn is after)
                peer.lock.acquire()
                locked[peer] = None
        try:
            for peer, frames in direct:  # written from this thread, at once
                peer.send(frames)
        finally:
            for peer in locked:
                peer.lock.release()
        # once for all ranks; a cell written to every rank directly wakes nobody else (unless
        # wake_cells): what it queued above runs when the I/O thread wakes for the first
        # answer, or at its tick
        cell = isinstance(message, Execute)
        if shared or len(direct) < len(peers) or not cell or self.wake_cells:
            self._loop.wake()

    def ping(self, ranks: Sequence[int]) -> None:
        """Keep the connections to ``ranks`` fresh (a rank ignores a :class:`Ping`). Where they
        are behind relays, one ping goes to each relay, addressed to none of its ranks: the
        relay's connection is the one that idles across hosts, and a ping signed once for all
        would carry every rank's name (90 kB at 10,000 ranks) to each rank every 2 s."""
        _, _, shared, _ = self._routes.of(ranks, False, self._intake)
        if not shared:
            self.send(ranks, Ping())
            return
        with self._lock:
            once = self._signer.pack_all(Ping().to_header(), [])
            for relay in shared:
                self._loop.put([relay, *once], wake=False)
        self._loop.wake()
