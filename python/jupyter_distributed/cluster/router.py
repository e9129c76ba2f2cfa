"""The kernel's end of the control channel: a ROUTER socket on the shared I/O loop.

One I/O thread (:class:`~..ioloop.IoLoop`, the same loop a rank's channel runs) owns the
socket: it verifies every message (the signature before anything is unpickled),
:func:`~.decode.decode`\\ s it, writes the events to the store at once (one transaction per
batch, so a dying kernel loses nothing) and then hands the main thread typed items
(:mod:`.inbox`); what it knows of the cell being run is :mod:`.cellrun`'s. If the thread
fails (a full or locked history store, a ZeroMQ error), the owner learns the cause; what could
not be recorded is still handed over (shown) and counted.

What comes in is verified, ordered and decoded by :mod:`.intake`, which also knows through
which connection each rank is reached (the one its last verified message came on): a rank has
two, its control channel (``rN``) and its main thread's cell socket (``cN``, cells in and their
ends out, see ``worker/cellsocket.py``). Where ranks connect, and how the socket keeps others
out, is the :mod:`.transport`'s business. Where every rank is on this machine, the cell sockets
are Unix connections the I/O thread reads beside the ROUTER (:mod:`.cellpeers`), and a cell is
written to them by the thread that sends it, not handed to the I/O thread (:mod:`.outbox`).
Rejected messages are logged at most a few times a minute, then counted (:mod:`.throttle`).

No message may pass the cap on a whole message that the last cell sent its ranks
(``Distributed.max_message_mb``; ZeroMQ's ``MAXMSGSIZE`` bounds only each frame). A rank checks
what it sends, so a larger one is refused and named, and the cluster of a rank that sent it is
lost with that cause: the run fails, it never waits for what was refused.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import time
from collections.abc import Callable, Sequence

import zmq

from ..errors import StoreError
from ..events import Recorded, count
from ..history.store import Store
from ..interface import RankInfo, RunWriter
from ..ioloop import Batch, IoLoop
from ..protocol.commands import Execute
from ..protocol.frames import MAX_MESSAGE, too_large
from ..protocol.header import Message
from ..protocol.packets import BadPacket, TooLarge
from ..protocol.signing import KERNEL, Buffer, Signer
from .cellpeers import CellPeer, CellServer
from .cellrun import RECORD_AFTER, CellRun
from .decode import Ranks
from .inbox import ChannelLost, Item, Show
from .intake import Intake, Peer, Taken
from .outbox import Outbox
from .throttle import Throttled
from .transport import Transport, listen

log = logging.getLogger("jupyter_distributed")
PACE_MS = 50  # the I/O thread's tick, unless the cluster says otherwise (see Router.pace)


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
        self._signer = Signer(key, KERNEL)
        self._tick, self._on_lost = tick, on_lost
        self._last_ping = 0.0
        self._ping_to: list[int] = []  # (I/O thread) the ranks with a pid, once all have one
        self.cell = CellRun()  # (I/O thread) the cell being run
        self.intake = Intake(self.ranks, self.cell, self._signer, self._rejected_from)
        self.board = self.intake.board  # stack answers go here, to whichever thread asked
        self.rejected = Throttled()
        self.max_message = MAX_MESSAGE  # bytes of one message from a peer (the last cell's cap)
        self.record_after = RECORD_AFTER  # a run's record is written by then, at the latest
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
        self._pace_ms = PACE_MS
        self._running_ms = PACE_MS  # (the pace while a cell runs, see pace)
        self._rest_ms = 0  # (the pace while no cell runs, if set: see pace)
        self._loop = IoLoop(
            sock, self._on_batch, self._on_tick, self._failed, PACE_MS, name, tick_on_wake=False
        )
        self._outbox = Outbox(self._loop, self._signer, self.intake, self.cell)
        self._cells: CellServer | None = None
        if self.listener.directory is not None and CellServer.supported():
            try:
                self._cells = CellServer(
                    self.listener.directory, self._loop, self._take_batch, self.intake.gone,
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
        """Sign ``message`` once per rank and send it (see :class:`~.outbox.Outbox`); a cell
        sets the cap on the messages that come back."""
        if isinstance(message, Execute):
            self.max_message = message.max_message or self.max_message
        self._outbox.send(ranks, message, buffers)

    def peer_count(self) -> int:
        """The connections the kernel holds to its ranks (to their relays, where they have
        them): the ranks' two each, or one per relay."""
        peers = [*self.intake.peers.values(), *self.intake.cell_peers.values()]
        return len({p if isinstance(p, bytes) else id(p) for p in peers})

    def watch(self, fd: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the I/O thread once ``fd`` is readable (the loop then closes it)."""
        self._loop.watch(fd, fn)

    def pace(self, poll_ms: int, running_ms: int | None = None, rest_ms: int = 0) -> None:
        """Tick about every ``poll_ms`` (any thread, before the first cell; see
        :meth:`IoLoop.pace`), and every ``running_ms`` (if longer) while a cell's ranks are
        awaited and its record is written: where deaths wake the I/O thread (pidfds), a long
        cell's ticks (process watch, controls, pings: due every 0.25 s or less often) need not
        wake the kernel 20 times a second on its ranks' cores (issue 26). Between cells
        ``rest_ms`` if given, else ``poll_ms``: with ``rest_ms`` a cell wakes the I/O thread as
        it is sent (over the local cell sockets too, see :attr:`.Outbox.wake_cells`), which
        starts the run at once, not at the next tick."""
        self._pace_ms = poll_ms
        if running_ms is not None:
            self._running_ms = running_ms
        self._rest_ms = rest_ms
        self._outbox.wake_cells = bool(rest_ms)
        self._loop.pace(rest_ms or poll_ms)

    def tick_now(self) -> None:
        """(I/O thread) Tick at the end of this round of the loop, not when next due."""
        self._loop.tick_within(0.0)

    def begin(self, run_id: str, writer: RunWriter | None = None) -> None:
        """The run starts: output from now on is its. Takes effect on the I/O thread before
        the next :meth:`send` goes out, without a wake-up of its own (the send's wakes it).
        With ``writer`` (the run's record not written yet) the run's events are written
        through it: the record goes with the first of them (see :mod:`.cellrun`)."""
        self.unrecorded = 0
        record_by = time.monotonic() + self.record_after  # (from now, not when start runs)

        def start() -> None:
            rested = bool(self._rest_ms) and not self.ranks.run_id
            self.cell.start(writer, record_by)
            if writer is not None:
                self._loop.tick_within(max(0.0, record_by - time.monotonic()))
            self.record(list(self.ranks.begin(run_id)), [])
            self._repace(rested)  # (from the pace at rest to the cell's: a tick when due)

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

    def _rejected_from(self, peer: Peer, cause: object) -> None:
        self._reject(self.address if isinstance(peer, bytes) else self.cells_address, cause)

    @property
    def reduced_ends(self) -> int:
        """Ranks' ends of cells that came in relays' reductions (I/O thread's count)."""
        return self.intake.reduced_ends

    @property
    def batched(self) -> int:
        """Ranks' output messages that came in relays' batches (I/O thread's count)."""
        return self.intake.batched

    def _cell_rejected(self, peer: CellPeer, exc: BadPacket) -> None:
        if isinstance(exc, TooLarge):
            self._oversized(peer, exc.size)
        else:
            self._reject(self.cells_address, exc)

    def _oversized(self, peer: bytes | CellPeer, size: int) -> None:
        """(I/O thread) ``peer`` sent a message over the cap: refused and named; if the
        connection is a rank's, the cluster is lost with that cause."""
        ranks = self.intake.ranks_of(peer)
        who = f"rank {min(ranks)}" if ranks else "a peer that is no rank"
        cause = too_large(f"a message from {who}", size, self.max_message)
        if not ranks:
            self._reject(self.address if isinstance(peer, bytes) else self.cells_address, cause)
            return
        log.error("jupyter-distributed: %s", cause)
        self._on_lost(cause)

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
        self._repace()  # (a cell that ended without every rank's end: the usual pace now)
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
            if len(self._ping_to) < len(self.ranks.info):  # (not once every rank said hello)
                self._ping_to = [i for i, r in self.ranks.info.items() if r.pid]
            self._outbox.ping(self._ping_to)
        self._repace()

    def _repace(self, from_now: bool = False) -> None:
        """(I/O thread) The tick's pace: slower while a cell runs, or while none does where a
        pace at rest is set (see :meth:`pace`); ``from_now``: see :meth:`IoLoop.pace`."""
        if self._rest_ms and not self.ranks.run_id:
            self._loop.pace(self._rest_ms)
            return
        running = bool(self.cell.awaited) and self.cell.writer is None
        pace = max(self._pace_ms, self._running_ms) if running else self._pace_ms
        self._loop.pace(pace, from_now)

    def _on_batch(self, batch: Batch) -> None:
        taken: list[tuple[bytes | CellPeer, list[Buffer]]] = []
        for frames in batch:
            size = sum(len(f) for f in frames[1:])
            if size > self.max_message:  # (the sum: ZeroMQ's own limit is per frame)
                self._oversized(frames[0].bytes, size)
            else:
                taken.append((frames[0].bytes, [f.buffer for f in frames[1:]]))
        self._take_batch(taken)

    def _take_batch(self, batch: Sequence[tuple[Peer, list[Buffer]]]) -> None:
        """Verify, order, decode (:mod:`.intake`) and record a batch of messages."""
        awaited = bool(self.cell.awaited)
        self._finish_batch(self.intake.take(batch), awaited)
        if awaited and not self.cell.awaited:  # the cell's last rank ended: the usual pace
            self._repace()

    def _finish_batch(self, taken: Taken, awaited: bool) -> None:
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
