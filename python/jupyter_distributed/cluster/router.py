"""The kernel's end of the control channel: a ROUTER socket on the shared I/O loop.

One I/O thread (:class:`~..ioloop.IoLoop`, the same loop a rank's channel runs) owns the
socket: it verifies every message (the signature before anything is unpickled),
:func:`~.decode.decode`\\ s it, writes the events to the store at once (one transaction per
batch, so a dying kernel loses nothing) and then hands the main thread typed items
(:mod:`.inbox`); what it knows of the cell being run is :mod:`.cellrun`'s. If the thread
fails (a full or locked history store, a ZeroMQ error), the owner learns the cause; what could
not be recorded is still handed over (shown) and counted.

Who sent a message is the ``src`` in its signed header, never the ZeroMQ identity a peer picks
for itself: the ROUTER gives every connection a random routing id, and the kernel routes to
rank N through the connection its last verified message from N arrived on. A rank has two: its
control channel (``rN``) and its main thread's cell socket (``cN``, cells in and their ends
out, see ``worker/cellsocket.py``); a message of the second waits for the control messages it
follows (:mod:`.cellorder`). A peer that connects first under any name cannot take a rank's
place (it cannot sign as that rank; a replay is refused by the counters of
:mod:`~..protocol.signing`). Where ranks connect, and how the socket keeps others out, is the
:mod:`.transport`'s business. Where every rank is on this machine, the cell sockets are Unix
connections the I/O thread reads beside the ROUTER (:mod:`.cellpeers`), and a cell is written
to them by the thread that sends it, not handed to the I/O thread. Rejected messages are logged
at most a few times a minute, then counted (:mod:`.throttle`).

No message may pass the cap on a whole message that the last cell sent its ranks
(``Distributed.max_message_mb``; ZeroMQ's ``MAXMSGSIZE`` bounds only each frame). A rank checks
what it sends, so a larger one is refused and named, and the cluster of a rank that sent it is
lost with that cause: the run fails, it never waits for what was refused.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import zmq

from ..errors import StoreError
from ..events import Recorded, count
from ..history.store import Store
from ..interface import RankInfo, RunWriter
from ..ioloop import Batch, IoLoop
from ..protocol.commands import MAIN_THREAD, Execute, Ping
from ..protocol.frames import MAX_MESSAGE, join_parts, too_large
from ..protocol.header import BadHeader, Message
from ..protocol.messages import parse
from ..protocol.packets import BadPacket, TooLarge
from ..protocol.signing import (
    KERNEL,
    BadMessage,
    Buffer,
    Signer,
    cell_name,
    digest,
    rank_name,
    sender,
)
from .cellorder import CellOrder, after
from .cellpeers import CellPeer, CellServer
from .cellrun import RECORD_AFTER, CellRun
from .decode import Ranks, decode
from .fanbatch import relayed
from .fancompact import Compacting
from .fanin import REDUCED, relay_node
from .inbox import ChannelLost, Exited, Finished, Item, Show, StacksReply
from .stackboard import StackBoard
from .throttle import Throttled
from .transport import Transport, listen

log = logging.getLogger("jupyter_distributed")


class Router:
    def __init__(
        self,
        name: str,
        store: Store,
        info: dict[int, RankInfo],
        key: bytes,
        tick: Callable[[], None],
        on_lost: Callable[[str], None],
        transport: Transport,
    ) -> None:
        self.store = store
        self.inbox: queue.SimpleQueue[Item] = queue.SimpleQueue()
        self.ranks = Ranks(info)
        self.unrecorded = 0  # events of the current run the store could not keep
        self.reduced_ends = 0  # ranks' ends of cells that came in relays' reductions (I/O thread)
        self.batched = 0  # ranks' output messages that came in relays' batches (I/O thread)
        self.board = StackBoard()  # stack answers go here, to whichever thread asked
        self._signer = Signer(key, KERNEL)
        self._tick, self._on_lost = tick, on_lost
        self._last_ping = 0.0
        self._peers: dict[int, bytes] = {}  # rank -> routing id of its control channel
        self._cell_peers: dict[int, bytes | CellPeer] = {}  # rank -> its cell socket
        self._order = CellOrder()  # (I/O thread) cell-socket messages ahead of their turn
        self.cell = CellRun()  # (I/O thread) the cell being run
        self._send_lock = threading.Lock()
        self.rejected = Throttled()
        self.max_message = MAX_MESSAGE  # bytes of one message from a peer (the last cell's cap)
        self._ctx = zmq.Context()
        sock = self._ctx.socket(zmq.ROUTER)
        for opt in (zmq.SNDHWM, zmq.RCVHWM):
            sock.setsockopt(opt, 0)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            self.listener = listen(self._ctx, sock, transport)
        except BaseException:
            sock.close(linger=0)
            self._ctx.term()
            raise
        self.address = self.listener.address
        self.curve = self.listener.curve
        self._loop = IoLoop(sock, self._on_batch, self._on_tick, self._failed, 50, name)
        self._cells: CellServer | None = None
        if self.listener.directory is not None and CellServer.supported():
            try:
                self._cells = CellServer(
                    self.listener.directory, self._loop, self._take_batch, self._gone,
                    self._cell_rejected, lambda: self.max_message,
                )  # fmt: skip
            except BaseException:
                self.listener.close()
                sock.close(linger=0)
                self._ctx.term()
                raise
        #: where ranks connect their cell sockets (``None``: to :attr:`address`, over ZeroMQ)
        self.cells_address = None if self._cells is None else str(self._cells.path)

    def start(self) -> None:
        self._loop.start()

    def send(self, ranks: Sequence[int], message: Message, buffers: Sequence[Buffer] = ()) -> None:
        """Sign ``message`` once per rank (its buffers hashed once for all) and queue it. A rank
        that has not been heard from yet has no connection to send on: it is skipped."""
        header = message.to_header()
        digests = [digest(b) for b in buffers]
        if isinstance(message, MAIN_THREAD):  # to the rank's main thread, directly
            peers = [(r, p) for r in ranks if (p := self._cell_peers.get(r)) is not None]
            names = [cell_name(r) for r, _ in peers]
        else:
            peers = [(r, p) for r in ranks if (p := self._peers.get(r)) is not None]
            names = [rank_name(r) for r, _ in peers]
        if isinstance(message, Execute):  # (before the cell leaves: its answers are awaited)
            self.max_message = message.max_message or self.max_message
            sent = {r for r, _ in peers}
            self._loop.call(lambda: self.cell.sent_to(sent), wake=False)
        direct: list[tuple[CellPeer, list[Buffer]]] = []
        locked: dict[CellPeer, None] = {}
        shared = _shared(peers)
        with self._send_lock:  # counters leave in order, whichever thread sends
            if shared:  # through relays: signed once for all, one message per relay
                once = self._signer.pack_all(header, names, buffers, digests)
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
        # once for all ranks; a cell written to every rank directly wakes nobody else: what
        # it queued above runs when the I/O thread wakes for the first answer, or at its tick
        if shared or len(direct) < len(peers) or not isinstance(message, Execute):
            self._loop.wake()

    def peer_count(self) -> int:
        """The connections the kernel holds to its ranks (to their relays, where they have
        them): the ranks' two each, or one per relay."""
        peers = [*self._peers.values(), *self._cell_peers.values()]
        return len({p if isinstance(p, bytes) else id(p) for p in peers})

    def watch(self, fd: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the I/O thread once ``fd`` is readable (the loop then closes it)."""
        self._loop.watch(fd, fn)

    def begin(self, run_id: str, writer: RunWriter | None = None) -> None:
        """The run starts: output from now on is its. Takes effect on the I/O thread before
        the next :meth:`send` goes out, without a wake-up of its own (the send's wakes it).
        With ``writer`` (the run's record not written yet) the run's events are written
        through it: the record goes with the first of them (see :mod:`.cellrun`)."""
        self.unrecorded = 0
        record_by = time.monotonic() + RECORD_AFTER  # (from now, not from when start runs)

        def start() -> None:
            self.cell.start(writer, record_by)
            if writer is not None:
                self._loop.tick_within(max(0.0, record_by - time.monotonic()))
            self.record(list(self.ranks.begin(run_id)), [])

        self._loop.call(start, wake=False)

    def call(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the I/O thread, in order with the queued messages."""
        self._loop.call(fn)

    def end(self) -> None:
        """The run is over: takes effect when the I/O thread next wakes (not woken for it),
        before it reads any message that arrives after this."""
        self._loop.call(self._ended, wake=False)

    def close(self) -> None:
        self._loop.call(lambda: self.record([], []))  # what is held back, before the end
        stopped = self._loop.stop(5)
        if self._cells is not None:
            self._cells.close(stopped)
        self.listener.close()
        if stopped:
            self._ctx.term()

    def record(self, events: Sequence[Recorded], items: list[Item]) -> None:
        """Record ``events``, then hand over ``items`` (the history is never behind the cell).
        When the store fails, the items are still handed over (shown) and the events counted.
        Replies held back (see :mod:`.cellrun`) go first, in the same transaction. Only on
        the I/O thread."""
        events, items = self.cell.take_held(events, items)
        try:
            if events:
                (self.cell.writer or self.store).append(events)
        except BaseException:
            self.unrecorded += count(events)
            raise
        finally:
            for item in items:
                self.inbox.put(item)

    def _reject(self, where: str | None, cause: object) -> None:
        self.rejected.warning("jupyter-distributed: rejected a message on %s: %s", where, cause)

    def _cell_rejected(self, peer: CellPeer, exc: BadPacket) -> None:
        if isinstance(exc, TooLarge):
            self._oversized(peer, exc.size)
        else:
            self._reject(self.cells_address, exc)

    def _oversized(self, peer: bytes | CellPeer, size: int) -> None:
        """(I/O thread) ``peer`` sent a message over the cap: refused and named; if the
        connection is a rank's, the cluster is lost with that cause."""
        ranks = [r for r, p in self._peers.items() if p == peer]
        ranks += [r for r, p in self._cell_peers.items() if p is peer]
        who = f"rank {min(ranks)}" if ranks else "a peer that is no rank"
        cause = too_large(f"a message from {who}", size, self.max_message)
        if not ranks:
            self._reject(self.address if isinstance(peer, bytes) else self.cells_address, cause)
            return
        log.error("jupyter-distributed: %s", cause)
        self._on_lost(cause)

    def _gone(self, peer: CellPeer) -> None:
        """(I/O thread) A rank closed its cell connection: nothing more is sent on it."""
        for rank in [r for r, p in self._cell_peers.items() if p is peer]:
            del self._cell_peers[rank]

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, StoreError):
            cause = str(exc)  # names the store's path already
        elif isinstance(exc, sqlite3.Error):
            cause = f"history store at {self.store.path}: {exc}"
        else:
            cause = f"the control channel failed: {type(exc).__name__}: {exc}"
        log.error("jupyter-distributed: control channel %s lost: %s", self.address, cause)
        self._on_lost(cause)
        held_events, held_items = self.cell.take_held([], [])
        self.unrecorded += count(held_events)  # (never recorded; shown all the same)
        for item in held_items:
            self.inbox.put(item)
        self.inbox.put(ChannelLost(cause))

    def _ended(self) -> None:
        self.ranks.run_id = ""
        self.cell.end()
        self.record([], [])

    def _on_tick(self) -> None:
        if self.cell.held_due():
            self.record([], [])
        writer = self.cell.record_due()
        if writer is not None:
            writer.append([])  # the cell runs on: the run's record, now
        self._tick()
        self.rejected.flush()
        now = time.monotonic()
        if now - self._last_ping >= 2.0:
            self._last_ping = now
            self.send([i for i, r in self.ranks.info.items() if r.pid], Ping())

    def _on_batch(self, batch: Batch) -> None:
        taken: list[tuple[bytes | CellPeer, list[Buffer]]] = []
        for frames in batch:
            size = sum(len(f) for f in frames[1:])
            if size > self.max_message:  # (the sum: ZeroMQ's own limit is per frame)
                self._oversized(frames[0].bytes, size)
            else:
                taken.append((frames[0].bytes, [f.buffer for f in frames[1:]]))
        self._take_batch(taken)

    def _take_batch(self, batch: Sequence[tuple[bytes | CellPeer, list[Buffer]]]) -> None:
        """Verify, order, decode and record a batch of messages, each with who it came from
        (a ZeroMQ routing id, or a Unix cell connection)."""
        taken, awaited = _Taken(), bool(self.cell.awaited)
        for peer, frames in batch:
            try:
                header, buffers = self._signer.unpack(frames)
                if relay_node(str(header["src"])) is not None:  # a relay's own message
                    self._take_relayed(taken, peer, header)
                    continue
                rank, cell = sender(str(header["src"]))
                if not cell and isinstance(peer, CellPeer):
                    raise BadMessage(f"{header['src']} on a cell socket")
                if "parts" in header:  # a buffer the rank cut into frames
                    buffers = join_parts(buffers, header["parts"])
                message = parse(header)
                wait = after(header) if cell else 0
            except (BadMessage, BadHeader, ValueError) as exc:
                self._reject(self.address if isinstance(peer, bytes) else self.cells_address, exc)
                continue
            self._route(taken, peer, rank, cell, message, buffers, wait)
        self._finish_batch(taken, awaited)

    def _take_relayed(self, taken: _Taken, peer: bytes | CellPeer, header: dict[str, Any]) -> None:
        """Each rank's message in a relay's verified reduction (its ranks' ``Done``) or batch
        (their output), taken as if it had come from the rank: its counter checked, in the
        order its ``after`` asks (see :mod:`.fanin`, :mod:`.fanbatch`)."""
        if not isinstance(peer, bytes):
            raise BadMessage(f"{header['src']} on a cell socket")
        info = self.ranks.info
        parsed = relayed(header, lambda r: info[r].coords.node_rank if r in info else None)
        if header.get("type") == REDUCED:  # its ranks' states: one event (see .fancompact)
            taken.compacting = Compacting()
        try:
            for rank, src, seq, wait, message in parsed:
                if not self._signer.vouched(src, seq):
                    self._reject(self.address, f"replayed message {src}#{seq}")
                    continue
                cell = src[0] == "c"
                self.reduced_ends += cell
                self.batched += not cell
                self._route(taken, peer, rank, cell, message, [], wait)
        finally:
            if taken.compacting is not None:
                taken.shown = taken.compacting.close(taken.events, taken.items, taken.shown)
                taken.compacting = None

    def _route(
        self,
        taken: _Taken,
        peer: bytes | CellPeer,
        rank: int,
        cell: bool,
        message: Message | None,
        buffers: list[Buffer],
        wait: int,
    ) -> None:
        """Take a verified message of ``rank`` now, or once the control messages it follows
        are in (``cell``: from its cell socket, ``wait`` its ``after``)."""
        if rank in self.ranks.info:  # verified: this connection is rank's
            if cell:
                self._cell_peers[rank] = peer
            elif isinstance(peer, bytes):  # (always: refused above on a cell socket)
                self._peers[rank] = peer
        accepted = self._signer.accepted(rank_name(rank))
        if cell and message is not None and not self._order.ready(rank, wait, accepted):
            self._order.wait(rank, (wait, message, buffers))  # its output is on the way
            return
        if message is not None:
            self._take(taken, rank, message, buffers)
        if not cell:
            for _, waited, waited_buffers in self._order.release(rank, accepted):
                self._take(taken, rank, waited, waited_buffers)

    def _finish_batch(self, taken: _Taken, awaited: bool) -> None:
        """Record what a batch gave and hand it over (or hold it back, see :mod:`.cellrun`)."""
        events, items = taken.events, taken.items
        end = None if self.unrecorded else self.cell.end_if_complete(self.ranks.run_id, awaited)
        if end is not None:  # (the main thread records its own only if it decides otherwise)
            events.append(end)
        if len(events) > taken.shown:
            items.append(Show(tuple(events[taken.shown :])))
        due = None if taken.lost else self.cell.hold(events, items)
        if due is not None:
            self._loop.tick_within(due)
            return
        try:
            self.record(events, items)
        finally:  # as for an exit: the failure is in the inbox before the cluster reads lost
            if taken.lost:
                self._on_lost(taken.lost)

    def _take(self, taken: _Taken, rank: int, message: Message, buffers: list[Buffer]) -> None:
        """Decode a verified message of ``rank`` into the batch's events and items."""
        decoded = decode(self.ranks, rank, message, buffers)
        events, items = taken.events, taken.items
        self.cell.took(decoded.events, decoded.item)
        if taken.compacting is not None and isinstance(decoded.item, Finished):
            taken.compacting.took(events, decoded.events, decoded.item)
            return
        events.extend(decoded.events)
        if isinstance(decoded.item, StacksReply):
            self.board.put(decoded.item)
        elif decoded.item is not None:  # in order: the events before it are shown first
            if len(events) > taken.shown:
                items.append(Show(tuple(events[taken.shown :])))
                taken.shown = len(events)
            items.append(decoded.item)
        if isinstance(decoded.item, Exited):  # a rank restarted: the cluster is lost
            taken.lost = taken.lost or decoded.item.failure.summary


def _shared(peers: Sequence[tuple[int, bytes | CellPeer]]) -> list[bytes]:
    """The relays' connections, where ``peers`` go through relays (several ranks on one
    ZeroMQ connection: a relay's); [] where each rank has its own connection (no relays)."""
    ids = [p for _, p in peers if isinstance(p, bytes)]
    distinct = list(dict.fromkeys(ids))
    return distinct if len(ids) == len(peers) and len(distinct) < len(ids) else []


@dataclass
class _Taken:
    """What one batch of messages gave: events to record, items for the main thread."""

    events: list[Recorded] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    shown: int = 0  # events[shown:] are not in an item yet
    lost: str = ""
    compacting: Compacting | None = None  # while a relay's reduction is taken
