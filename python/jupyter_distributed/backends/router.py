"""The kernel's end of the control channel: a ROUTER socket on the shared I/O loop.

One I/O thread (:class:`~..worker.loop.IoLoop`, the same loop a rank's channel runs) owns the
socket: it verifies every message (the signature before anything is unpickled),
:func:`~.decode.decode`\\ s it, writes the events to the store at once (one transaction per
batch, so a dying kernel loses nothing) and then hands the main thread typed items
(:mod:`.inbox`). If the thread fails (a full or locked history store, a ZeroMQ error), the
owner learns the cause; what could not be recorded is still handed over (shown) and counted.

Who sent a message is the ``src`` in its signed header, never the ZeroMQ identity a peer picks
for itself: the ROUTER gives every connection a random routing id, and the kernel routes to
rank N through the connection its last verified message from N arrived on. A peer that
connects first under any name cannot take a rank's place (it cannot sign as that rank; a replay
is refused by the counters of :mod:`~..protocol.signing`). Where ranks connect, and how the
socket keeps others out, is the :mod:`.transport`'s business. Rejected messages are logged at
most :data:`WARN_BURST` times a minute, then counted.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence

import zmq

from ..errors import StoreError
from ..events import MetricEvent, RankEvent, Recorded, count
from ..protocol.commands import Execute, Ping
from ..protocol.frames import join_parts
from ..protocol.header import BadHeader, Message
from ..protocol.messages import parse
from ..protocol.signing import KERNEL, BadMessage, Buffer, Signer, digest, rank_name
from ..store import Store
from ..worker.loop import Batch, IoLoop
from .base import RankInfo
from .decode import Ranks, decode
from .inbox import ChannelLost, Exited, Finished, Item, Show, StacksReply
from .stackboard import StackBoard
from .transport import Transport, listen

log = logging.getLogger("jupyter_distributed")
# seconds a rank's quiet reply to a cell (its state and end, nothing to show) waits for the
# other ranks' before it is recorded: a cell's replies in one transaction, not one per rank
HOLD = 0.005
WARN_BURST = 5  # rejected-message warnings per WARN_WINDOW; the rest are counted
WARN_WINDOW = 60.0


class Throttled:
    """Warnings about rejected messages, at most ``burst`` per ``window`` seconds; the number
    left out is told once the window ends (a flood of junk gives a few lines, not thousands)."""

    def __init__(self, burst: int = WARN_BURST, window: float = WARN_WINDOW) -> None:
        self.burst, self.window = burst, window
        self._start, self._shown, self.dropped = time.monotonic(), 0, 0

    def warning(self, msg: str, *args: object) -> None:
        self.flush()
        if self._shown < self.burst:
            self._shown += 1
            log.warning(msg, *args)
        else:
            self.dropped += 1

    def flush(self) -> None:
        now = time.monotonic()
        if now - self._start < self.window:
            return
        if self.dropped:
            log.warning(
                "jupyter-distributed: %d more messages rejected in the last %.0f s",
                self.dropped,
                now - self._start,
            )
        self._start, self._shown, self.dropped = now, 0, 0


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
        self.board = StackBoard()  # stack answers go here, to whichever thread asked
        self._signer = Signer(key, KERNEL)
        self._tick, self._on_lost = tick, on_lost
        self._last_ping = 0.0
        self._peers: dict[int, bytes] = {}  # rank -> routing id of its connection
        # (I/O thread) ranks sent a cell that have not answered; replies held back for them
        self._awaited: set[int] = set()
        self._held: tuple[list[Recorded], list[Item]] = ([], [])
        self._held_until = 0.0
        self._send_lock = threading.Lock()
        self.rejected = Throttled()
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

    def start(self) -> None:
        self._loop.start()

    def send(self, ranks: Sequence[int], message: Message, buffers: Sequence[Buffer] = ()) -> None:
        """Sign ``message`` once per rank (its buffers hashed once for all) and queue it. A rank
        that has not been heard from yet has no connection to send on: it is skipped."""
        header = message.to_header()
        digests = [digest(b) for b in buffers]
        peers = [(r, p) for r in ranks if (p := self._peers.get(r)) is not None]
        if isinstance(message, Execute):  # (before the cell leaves: its answers are awaited)
            sent = {r for r, _ in peers}
            self._loop.call(lambda: self._await(sent), wake=False)
        names = [rank_name(r) for r, _ in peers]
        with self._send_lock:  # counters leave in order, whichever thread sends
            signed = self._signer.pack_each(header, names, buffers, digests)
            for (_, peer), frames in zip(peers, signed, strict=True):
                self._loop.put([peer, *frames], wake=False)
        self._loop.wake()  # once for all ranks (each wake-up lets go of the GIL)

    def watch(self, fd: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the I/O thread once ``fd`` is readable (the loop then closes it)."""
        self._loop.watch(fd, fn)

    def begin(self, run_id: str) -> None:
        """The run starts: output from now on is its. Takes effect on the I/O thread before
        the next :meth:`send` goes out, without a wake-up of its own (the send's wakes it)."""
        self.unrecorded = 0
        self._loop.call(lambda: self.record(list(self.ranks.begin(run_id)), []), wake=False)

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
        self.listener.close()
        if stopped:
            self._ctx.term()

    def record(self, events: Sequence[Recorded], items: list[Item]) -> None:
        """Record ``events``, then hand over ``items`` (the history is never behind the cell).
        When the store fails, the items are still handed over (shown) and the events counted.
        Replies held back (see :data:`HOLD`) go first, in the same transaction. Only on the
        I/O thread."""
        if self._held[0] or self._held[1]:
            events, items = [*self._held[0], *events], self._held[1] + items
            self._held = ([], [])
        try:
            if events:
                self.store.append(events)
        except BaseException:
            self.unrecorded += count(events)
            raise
        finally:
            for item in items:
                self.inbox.put(item)

    def _failed(self, exc: BaseException) -> None:
        if isinstance(exc, StoreError):
            cause = str(exc)  # names the store's path already
        elif isinstance(exc, sqlite3.Error):
            cause = f"history store at {self.store.path}: {exc}"
        else:
            cause = f"the control channel failed: {type(exc).__name__}: {exc}"
        log.error("jupyter-distributed: control channel %s lost: %s", self.address, cause)
        self._on_lost(cause)
        held_events, held_items = self._held
        self.unrecorded += len(held_events)  # (never recorded; shown all the same)
        for item in held_items:
            self.inbox.put(item)
        self._held = ([], [])
        self.inbox.put(ChannelLost(cause))

    def _await(self, ranks: set[int]) -> None:
        self._awaited = ranks

    def _ended(self) -> None:
        self.ranks.run_id = ""
        self._awaited = set()
        self.record([], [])

    def _hold(self, events: list[Recorded], items: list[Item]) -> bool:
        """Hold back a batch of quiet replies (rank states, samples; no output, no failure)
        while other ranks of the cell have not answered, for at most :data:`HOLD` seconds:
        it is then recorded with theirs. Nothing is handed over before it is recorded."""
        if not self._awaited or not all(isinstance(e, RankEvent | MetricEvent) for e in events):
            return False
        if not all(isinstance(i, Show | Finished) for i in items):
            return False
        if (events or items) and not (self._held[0] or self._held[1]):
            self._held_until = time.monotonic() + HOLD
            self._loop.tick_within(HOLD)
        self._held[0].extend(events)
        self._held[1].extend(items)
        return True

    def _on_tick(self) -> None:
        if (self._held[0] or self._held[1]) and time.monotonic() >= self._held_until:
            self.record([], [])
        self._tick()
        self.rejected.flush()
        now = time.monotonic()
        if now - self._last_ping >= 2.0:
            self._last_ping = now
            self.send([i for i, r in self.ranks.info.items() if r.pid], Ping())

    def _on_batch(self, batch: Batch) -> None:
        events: list[Recorded] = []
        items: list[Item] = []
        shown = 0  # events[shown:] are not in an item yet
        lost = ""
        for frames in batch:
            try:
                header, buffers = self._signer.unpack([f.buffer for f in frames[1:]])
                rank = int(str(header["src"]).removeprefix("r"))
                if "parts" in header:  # a buffer the rank cut into frames
                    buffers = join_parts(buffers, header["parts"])
                message = parse(header)
            except (BadMessage, BadHeader, ValueError) as exc:
                self.rejected.warning(
                    "jupyter-distributed: rejected a message on %s: %s", self.address, exc
                )
                continue
            if rank in self.ranks.info:
                self._peers[rank] = frames[0].bytes  # verified: this connection is rank's
            if message is None:
                continue
            decoded = decode(self.ranks, rank, message, buffers)
            events.extend(decoded.events)
            if isinstance(decoded.item, Finished):
                self._awaited.discard(rank)
            if isinstance(decoded.item, StacksReply):
                self.board.put(decoded.item)
            elif decoded.item is not None:  # in order: the events before it are shown first
                if len(events) > shown:
                    items.append(Show(tuple(events[shown:])))
                    shown = len(events)
                items.append(decoded.item)
            if isinstance(decoded.item, Exited):  # a rank restarted: the cluster is lost
                lost = lost or decoded.item.failure.summary
        if len(events) > shown:
            items.append(Show(tuple(events[shown:])))
        if not lost and self._hold(events, items):
            return
        try:
            self.record(events, items)
        finally:  # as for an exit: the failure is in the inbox before the cluster reads lost
            if lost:
                self._on_lost(lost)
