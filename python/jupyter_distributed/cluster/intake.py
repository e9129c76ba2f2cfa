"""What the kernel's I/O thread takes from its peers (:mod:`.router`'s inbound half).

A batch of messages, each with who it came from (a ZeroMQ routing id, or a Unix cell
connection), is verified (the signature before anything is unpickled), put in the order the
ranks sent it and decoded into events and the main thread's items; the router records them and
hands them over. Who sent a message is the ``src`` in its signed header, never the ZeroMQ
identity a peer picks for itself: the kernel routes to rank N through the connection its last
verified message from N arrived on (:attr:`Intake.peers`, :attr:`Intake.cell_peers`). A
message of a rank's cell socket waits for the control messages it follows (:mod:`.cellorder`).
A relay's batch (:mod:`.fanbatch`) is taken rank by rank, each rank's counter checked as if its
message had come alone; a relay's reduction (:mod:`.fanin`) is vouched for by the relay's own
counter, its plain ends taken per span, and its rank states become one event
(:mod:`.fancompact`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import Recorded
from ..interface import LAST_LINES
from ..protocol.frames import join_parts
from ..protocol.header import BadHeader, Message
from ..protocol.messages import parse
from ..protocol.reports import Done
from ..protocol.signing import BadMessage, Buffer, Signer, rank_name, sender
from ..rankviews import RankSpans
from .cellorder import CellOrder, after
from .cellpeers import CellPeer
from .cellrun import CellRun
from .decode import Ranks, decode
from .fanbatch import relayed
from .fancollapse import Shared, take_shared
from .fancompact import Compacting
from .fanin import REDUCED, ranged, spans
from .fanlines import Gather, Plain
from .hopnames import hop_nodes
from .inbox import Exited, Finished, Item, Show, StacksReply
from .noderuns import NodeRuns
from .routes import Table
from .stackboard import StackBoard

Peer = bytes | CellPeer


@dataclass
class Taken:
    """What one batch of messages gave: events to record, items for the main thread."""

    events: list[Recorded] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    shown: int = 0  # events[shown:] are not in an item yet
    lost: str = ""
    compacting: Compacting | None = None  # while a relay's reduction is taken


class Intake:
    """(I/O thread) Verifies, orders and decodes what the ranks and relays send."""

    def __init__(
        self,
        ranks: Ranks,
        cell: CellRun,
        signer: Signer,
        reject: Callable[[Peer, object], None],
    ) -> None:
        self.ranks, self.cell, self._signer, self._reject = ranks, cell, signer, reject
        self.board = StackBoard()  # stack answers go here, to whichever thread asked
        self.peers: dict[int, bytes] = Table()  # rank -> routing id of its control channel
        self.cell_peers: dict[int, Peer] = Table()  # rank -> its cell socket
        self._spans_on: dict[tuple[int, int], bytes] = {}  # a span's ends came last on (above)
        self.reduced_ends = 0  # ranks' ends of cells that came in relays' reductions
        self.batched = 0  # ranks' output messages that came in relays' batches
        self.shared = 0  # ... of them sent alike by several ranks, sent up once
        self._order = CellOrder()  # cell-socket messages ahead of their turn
        self.spans = RankSpans(ranks.info)  # the ranks' views that reductions set at once
        self._runs: NodeRuns | None = None  # the ranks by node, for reductions' spans (made once)

    def take(self, batch: Sequence[tuple[Peer, list[Buffer]]]) -> Taken:
        """Verify, order and decode a batch of messages, each with who it came from."""
        taken = Taken()
        for peer, frames in batch:
            try:
                header, buffers = self._signer.unpack(frames)
                if hop_nodes(str(header["src"])) is not None:  # a relay's (aggregator's) own
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
                self._reject(peer, exc)
                continue
            self._route(taken, peer, rank, cell, message, buffers, wait)
        return taken

    def orphans(self, ranks: Iterable[int]) -> Taken:
        """(The ranks died.) Their cell-socket messages that wait for a control message which
        will now never come (queued in the rank, not yet sent, when it died), taken now in the
        order they came: a line printed just before ``os._exit`` is still the rank's output."""
        taken = Taken()
        for rank in ranks:
            self._take_waiting(taken, rank, sys.maxsize)
        return taken

    def gone(self, peer: CellPeer) -> None:
        """A rank closed its cell connection: nothing more is sent on it."""
        for rank in [r for r, p in self.cell_peers.items() if p is peer]:
            del self.cell_peers[rank]
        self._spans_on.clear()

    def ranks_of(self, peer: Peer) -> list[int]:
        """The ranks whose messages came on ``peer`` last."""
        ranks = [r for r, p in self.peers.items() if p == peer]
        return ranks + [r for r, p in self.cell_peers.items() if p is peer]

    def _take_relayed(self, taken: Taken, peer: Peer, header: dict[str, Any]) -> None:
        """Each rank's message in a relay's verified reduction (its ranks' ``Done``) or batch
        (their output), taken as if it had come from the rank, in the order its ``after`` asks
        (see :mod:`.fanin`, :mod:`.fanbatch`). A batch's messages have their ranks' counters
        checked; a reduction's ends are vouched for by the relay's own counter, checked with
        its signature (the relay checked each rank's)."""
        if not isinstance(peer, bytes):
            raise BadMessage(f"{header['src']} on a cell socket")
        info = self.ranks.info
        node_of = lambda r: info[r].coords.node_rank if r in info else None  # noqa: E731
        parsed = relayed(header, node_of)
        reduced = header.get("type") == REDUCED
        plain = ranged(header, node_of, self._node_runs(node_of)) if reduced else []
        if reduced:  # its ranks' states: one event (see .fancompact)
            taken.compacting = Compacting()
        try:
            if plain:
                self._take_plain(taken, peer, str(header["run_id"]), plain)
            gather, now = Gather(), time.time()  # (ranks' lines in a row: one event, .fanlines)
            for rank, src, seq, wait, message in parsed:
                if not (reduced or isinstance(message, Shared) or self._signer.vouched(src, seq)):
                    self._reject(peer, f"replayed message {src}#{seq}")
                    continue
                if isinstance(message, Plain):
                    if self._lines(gather, taken, peer, rank, message, now):
                        self.batched += 1
                        continue
                    message = message.message()
                gather.flush(taken.events)
                if isinstance(message, Shared):  # several ranks' alike (see .fancollapse)
                    self._take_shared(taken, peer, message)
                    continue
                cell = src[0] == "c"
                self.reduced_ends += cell
                self.batched += not cell
                self._route(taken, peer, rank, cell, message, [], wait)
            gather.flush(taken.events)
        finally:
            if taken.compacting is not None:
                taken.shown = taken.compacting.close(taken.events, taken.items, taken.shown)
                taken.compacting = None

    def _node_runs(self, node_of: Callable[[int], int | None]) -> NodeRuns:
        if self._runs is None:  # (a cluster's ranks and their nodes are known from its start)
            self._runs = NodeRuns(self.ranks.info, node_of)
        return self._runs

    def _lines(
        self, gather: Gather, taken: Taken, peer: bytes, rank: int, lines: Plain, now: float
    ) -> bool:
        """A rank's lines from a relay's batch, its counter checked, gathered into one event
        with the others' (what :func:`.decode` does for its message, and :meth:`_route`); False
        where it must be taken alone (see :mod:`.fanlines`)."""
        info = self.ranks.info.get(rank)
        run_id = lines.run_id or self.ranks.run_id
        if info is None or not run_id or self._order.waiting((rank,)):
            return False
        self.peers[rank] = peer
        info.last_seen = now
        info.lines.extend(lines.texts[-LAST_LINES:])
        if lines.texts:
            gather.add(taken.events, run_id, rank, lines)
        return True

    def _take_shared(self, taken: Taken, peer: bytes, shared: Shared) -> None:
        """Lines or stacks that several ranks of a relay's node sent alike: each rank's counter
        checked, the message decoded once for them all, then what waits for each rank's
        output released (as :meth:`_route` does for one rank's message)."""
        ranks = []
        for rank, seq in zip(shared.ranks, shared.seqs, strict=True):
            if self._signer.vouched(rank_name(rank), seq):
                ranks.append(rank)
            else:
                self._reject(peer, f"replayed message {rank_name(rank)}#{seq}")
        alike = take_shared(self.ranks, ranks, shared)
        self.batched += len(ranks)
        self.shared += len(ranks)
        taken.events.extend(alike.events)
        for reply in alike.replies:
            self.board.put(reply)
        for rank in ranks:
            if rank in self.ranks.info:
                self.peers[rank] = peer
            for _, waited, buffers in self._order.release(
                rank, self._signer.accepted(rank_name(rank))
            ):
                self._take(taken, rank, waited, buffers)

    def _take_plain(
        self, taken: Taken, peer: bytes, run_id: str, ranges: list[tuple[int, int]]
    ) -> None:
        """Plain ``ok`` ends a relay sent as ranges (see :mod:`.fanin`): one write per range
        to its ranks' views, no message made per rank. A rank whose earlier messages still
        wait for their turn (:mod:`.cellorder`) takes its end alone, after them."""
        behind: set[int] = set()
        for first, last in ranges:
            behind |= self._order.waiting(range(first, last + 1))
            self.reduced_ends += last - first + 1
            if self._spans_on.get((first, last)) != peer:  # (else each rank's is peer already)
                self.cell_peers.update(dict.fromkeys(range(first, last + 1), peer))
                self._spans_on[first, last] = peer
        if behind:
            for rank in sorted(behind):
                self._route(taken, peer, rank, True, Done(run_id, "ok"), [], 0)
            ends = [r for first, last in ranges for r in range(first, last + 1) if r not in behind]
            ranges = [(first, last) for first, last in spans(ends)]
        if ranges and taken.compacting is not None:
            for ended in taken.compacting.ended(self.spans, run_id, ranges, time.time()):
                self.cell.took([], ended)

    def _route(
        self,
        taken: Taken,
        peer: Peer,
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
                if self.cell_peers.get(rank) != peer:  # (a span's ranks are not all on one)
                    self._spans_on.clear()
                self.cell_peers[rank] = peer
            elif isinstance(peer, bytes):  # (always: refused above on a cell socket)
                self.peers[rank] = peer
        accepted = self._signer.accepted(rank_name(rank))
        if cell and message is not None and not self._order.ready(rank, wait, accepted):
            info = self.ranks.info.get(rank)
            if info is None or info.state not in ("exited", "failed"):
                self._order.wait(rank, (wait, message, buffers))  # its output is on the way
                return
            # (read after the rank's death: what it waits for died with it, see orphans)
            self._take_waiting(taken, rank, sys.maxsize)
        if message is not None:
            self._take(taken, rank, message, buffers)
        if not cell:
            self._take_waiting(taken, rank, accepted)

    def _take_waiting(self, taken: Taken, rank: int, accepted: int) -> None:
        """Take ``rank``'s cell-socket messages that waited for control messages up to
        ``accepted``, in the order they came."""
        for _, waited, waited_buffers in self._order.release(rank, accepted):
            self._take(taken, rank, waited, waited_buffers)

    def _take(self, taken: Taken, rank: int, message: Message, buffers: list[Buffer]) -> None:
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
