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
out, is the :mod:`.transport`'s business; the sockets are opened and closed by :mod:`.endpoint`.
Where every rank is on this machine, the cell sockets are Unix connections the I/O thread reads
beside the ROUTER (:mod:`.cellpeers`), and a cell is written to them by the thread that sends
it, not handed to the I/O thread (:mod:`.outbox`). How often the I/O thread ticks with
nothing to read, in a cell and between cells, is :mod:`.pace`'s.

No message may pass the cap on a whole message that the last cell sent its ranks
(``Distributed.max_message_mb``). What is refused, for that or any other cause, and how it is
told (a few lines a minute; the cluster of a rank that sent too much is lost with that cause),
is :mod:`.refusals`' business.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import time
from collections.abc import Callable, Sequence

from ..errors import StoreError
from ..events import Recorded, count
from ..history.store import Store
from ..interface import RankInfo, RunWriter
from ..ioloop import Batch, IoLoop
from ..protocol.commands import Execute
from ..protocol.frames import MAX_MESSAGE
from ..protocol.header import Message
from ..protocol.signing import KERNEL, Buffer, Signer
from .cellpeers import CellPeer, CellServer
from .cellrun import RECORD_AFTER, CellRun
from .decode import Ranks
from .endpoint import Endpoint
from .inbox import ChannelLost, Item, Show
from .intake import Intake, Peer, Taken
from .outbox import Outbox
from .pace import PACE_MS, Pace
from .refusals import Refusals
from .transport import Transport

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
        self._signer = Signer(key, KERNEL)
        self._tick, self._on_lost = tick, on_lost
        self._last_ping = 0.0
        self._ping_to: list[int] = []  # (I/O thread) the ranks with a pid, once all have one
        self.cell = CellRun()  # (I/O thread) the cell being run
        self._refusals = Refusals(  # (see :mod:`.refusals`)
            self._where, lambda peer: self.intake.ranks_of(peer), lambda: self.max_message, on_lost
        )
        self.rejected = self._refusals.rejected
        self.intake = Intake(self.ranks, self.cell, self._signer, self._refusals.rejected_from)
        self.board = self.intake.board  # stack answers go here, to whichever thread asked
        self.max_message = MAX_MESSAGE  # bytes of one message from a peer (the last cell's cap)
        self.record_after = RECORD_AFTER  # a run's record is written by then, at the latest
        self._endpoint = Endpoint(transport)  # (the sockets, see :mod:`.endpoint`)
        self.listener = self._endpoint.listener
        self.address = self.listener.address
        self.curve = self.listener.curve
        self._loop = IoLoop(
            self._endpoint.sock, self._on_batch, self._on_tick, self._failed, PACE_MS, name,
            tick_on_wake=False,
        )  # fmt: skip
        self._outbox = Outbox(self._loop, self._signer, self.intake, self.cell)
        self._pace = Pace(self._loop, self._outbox, self.ranks, self.cell)  # (see :mod:`.pace`)
        self._endpoint.serve_cells(
            lambda directory: CellServer(
                directory, self._loop, self._take_batch, self.intake.gone,
                self._refusals.cell_rejected, lambda: self.max_message,
            )
        )  # fmt: skip
        cells = self._endpoint.cells
        #: where ranks connect their cell sockets (``None``: to :attr:`address`, over ZeroMQ)
        self.cells_address = None if cells is None else str(cells.path)

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
        """The I/O thread's tick pace, in a cell and between cells: see :meth:`.Pace.set`."""
        self._pace.set(poll_ms, running_ms, rest_ms)

    def read_now(self) -> None:
        """(I/O thread) Take what the ranks sent that is already here (:meth:`IoLoop.read_now`)."""
        self._loop.read_now()

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
            rested = self._pace.resting()
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
        self._endpoint.close(self._loop.stop(5))

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

    def _where(self, peer: Peer) -> str | None:
        """The socket on which ``peer``'s messages come."""
        return self.address if isinstance(peer, bytes) else self.cells_address

    @property
    def reduced_ends(self) -> int:
        """Ranks' ends of cells that came in relays' reductions (I/O thread's count)."""
        return self.intake.reduced_ends

    @property
    def batched(self) -> int:
        """Ranks' output messages that came in relays' batches (I/O thread's count)."""
        return self.intake.batched

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
        """(I/O thread) The tick's pace as the cell now stands: see :meth:`.Pace.again`."""
        self._pace.again(from_now)

    def _on_batch(self, batch: Batch) -> None:
        taken: list[tuple[bytes | CellPeer, list[Buffer]]] = []
        for frames in batch:
            size = sum(len(f) for f in frames[1:])
            if size > self.max_message:  # (the sum: ZeroMQ's own limit is per frame)
                self._refusals.oversized(frames[0].bytes, size)
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
