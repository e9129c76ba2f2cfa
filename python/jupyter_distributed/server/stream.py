"""The live stream: every event after a client's cursor, then new ones as kernels write them.

Snapshot-then-subscribe over one cursor, the store's global event ``seq``: a client says the
last seq it has, gets everything after it in order (batched), then follows the tail. Because
writers commit one at a time, once the store's last seq is ``top`` every event up to ``top`` is
visible, so a reconnect with the last seq received neither misses nor repeats an event.

One :class:`Tail` per server looks at the store's last seq every ``interval`` seconds (only
while someone listens) and wakes the streams; each stream then reads its own slice off the event
loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from ..history.queries import event_json
from ..history.store import Store
from .nodebatch import Hosts, batches
from .wire import StreamItem, StreamMessage

BATCH = 1000  # events per message at most
BATCH_NODES = 2_000  # the same, rows batched per node (~60-80 bytes an event against 140):
# larger messages batch more per node but lose the overlap of the server's read with the
# panel's parse (Logs p95 at 1,000 ranks: 0.4-1.3 s at 10,000 a message, 0.3-0.4 s at 2,000)
POLL_INTERVAL = 0.1  # seconds between looks at the store while a stream is open
IDLE_WAKE = 5.0  # a stream re-reads at least this often even without news
DELTA_GAP = 0.2  # a stream that follows the tail sends at most 5 deltas a second (a backlog
# of full batches goes at once): at 1,000 ranks each delta carries more rows, not more messages


class Tail:
    """Watches the store's last seq for every open stream of one server."""

    def __init__(self, store: Store, interval: float = POLL_INTERVAL) -> None:
        self.store = store
        self.interval = interval
        self.seq = -1
        self._waiters: set[tuple[int, asyncio.Future[None]]] = set()
        self._task: asyncio.Task[None] | None = None

    async def wait_beyond(self, seq: int, timeout: float = IDLE_WAKE) -> None:
        """Return once the store holds an event after ``seq``, or after ``timeout``."""
        if self.seq > seq:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (seq, fut)
        self._waiters.add(entry)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._poll())
        try:
            await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            pass
        finally:
            self._waiters.discard(entry)
            if not self._waiters and self._task is not None:
                self._task.cancel()  # nobody listens: stop looking
                self._task = None

    async def _poll(self) -> None:
        while self._waiters:
            self.seq = await asyncio.to_thread(self.store.last_seq)
            for seq, fut in list(self._waiters):
                if self.seq > seq and not fut.done():
                    fut.set_result(None)
            await asyncio.sleep(self.interval)


def read_slice(
    store: Store, after: int, run_id: str | None, limit: int = BATCH, hosts: Hosts | None = None
) -> tuple[int, StreamMessage | None, bool]:
    """(the cursor to continue from, the message of the events after ``after`` or None when
    there are none, whether it holds ``limit`` events: more may wait); runs in a worker thread.
    With ``hosts``, rows batched per node (``format=nodes``, :mod:`.nodebatch`), else an
    object per event.

    The store's last seq is read first: when fewer than ``limit`` events come back, none up to
    it is left unread, so the cursor moves past other runs' events too."""
    top = store.last_seq()
    events = store.stored_after(after, run_id, limit)
    cursor = events[-1][1].seq if events else after
    if len(events) < limit:
        cursor = max(cursor, top)
    full = len(events) >= limit
    if not events:
        return cursor, None, full
    if hosts is not None:
        return cursor, {"batches": batches(events, hosts)}, full
    items: list[StreamItem] = [{"seq": e.seq, "event": event_json(e, rid)} for rid, e in events]
    return cursor, {"events": items}, full


def last_seq(message: StreamMessage) -> int:
    """The last seq a message holds (an SSE message's ``id``)."""
    seqs = [item["seq"] for item in message.get("events", [])]
    for batch in message.get("batches", []):
        seq = batch["seq"]
        seqs.append(seq if isinstance(seq, int) else seq[-1])
    return max(seqs)


Send = Callable[[StreamMessage], Awaitable[Any]]


async def pump(
    tail: Tail,
    after: int | None,
    run_id: str | None,
    send: Send,
    closed: Callable[[], bool],
    nodes: bool = False,
) -> None:
    """Send batches to one client until ``closed()``; ``after=None`` starts at the end;
    ``nodes``: rows batched per node.

    Caught up, it sends the next delta no sooner than ``DELTA_GAP`` after the last one."""
    store = tail.store
    loop = asyncio.get_running_loop()
    hosts = Hosts(store) if nodes else None
    cursor = after if after is not None else await asyncio.to_thread(store.last_seq)
    sent = -DELTA_GAP
    while not closed():
        cursor, message, full = await asyncio.to_thread(
            read_slice, store, cursor, run_id, BATCH if hosts is None else BATCH_NODES, hosts
        )
        if message is not None:
            await send(message)
            sent = loop.time()
        if not full:
            await tail.wait_beyond(cursor)
            if (wait := sent + DELTA_GAP - loop.time()) > 0:
                await asyncio.sleep(wait)


def encode(message: StreamMessage) -> str:
    return json.dumps(message, separators=(",", ":"))
