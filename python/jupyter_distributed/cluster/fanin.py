"""Fan-in as reductions: a node's relay answers for its ranks' ends of a cell in one message.

A relay (:mod:`.relay`) holds the ``Done`` each of its ranks sends for a cell and, once every
rank of the node that got the cell has ended or died (its connections closed,
:meth:`Reducer.gone`), or the held ones are due (:func:`hold_due`: the first has waited
:data:`HOLD_S` and no other came for :data:`QUIET_S`, or the first has waited
:data:`HOLD_MAX_S`: a straggler, a rank whose death the relay cannot see), sends the kernel
ONE message it signs itself, under its own name (:func:`relay_name`, ``n1`` for node 1, with
its own counter): "done on 4/4, 0 errors, slowest rank 6 after 3.1 ms", with each rank's
``Done`` as the rank signed it (its fields, its cell-socket counter and its ``after``). A
``Done`` that is an error, or that carries pulled values, is never held: it is forwarded
unchanged at once (the first error reaches the notebook while the other ranks still run).

**Plain ends as ranges.** Where the kernel takes them (its bootstrap's ``ranges``), the ends
that say nothing but ``ok`` (no value, no error, no pulled values, and no output of the rank
still on its way: the rank's ``after`` names a control message the relay has already passed
on, so it reaches the kernel before the reduction) travel as spans of ranks,
``"ranges": [[first, last], ...]``, instead of one ``Done`` each: "done on ranks 0-124".

**Replay protection per relay.** The relay verified each rank's ``Done`` (its signature and its
counter, as the kernel would) before it held it; the reduction it signs carries its own
counter, which only grows, and that counter stands for its ranks' counters in it: the kernel
refuses a reduction whose counter is not above the last it took from that relay (a replay of
the whole message), and takes the ends in it without checking each rank's counter (1,000 per
cell at 1,000 ranks). The ranks' own signed messages, and the ranks' messages in a relay's
batches, keep their ranks' counters, checked as before. Each ``each`` entry still names its
rank's counter and a kernel of ``ranges`` 1 still gets ``seqs`` (both checked there).

Trust: a relay holds the cluster's key and is trusted as a rank is, for its own node's ranks
only. The kernel (:func:`expand`, :func:`ranged`) refuses a reduction that speaks for a rank
of another node. The kernel then takes each rank's ``Done`` as it would have taken it from the
rank, in the order its ``after`` asks, except that the rank states the ends give are recorded
as one event (one history row) per reduction (:mod:`.fancompact`): the history's readers and
every view get each rank's states back as without relays.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.signing import cell_name, rank_name
from .hopnames import hop_nodes, speaker
from .noderuns import NodeRuns
from .relaydsts import ByDst

REDUCED = "dones"  # the type of a relay's reduced message (the kernel expands it)
# what a kernel's bootstrap says it takes (``ranges``): 1, plain ends as ranges with each rank's
# counter (``seqs``), which it checks; RANGES, without them, the relay's counter standing for
# theirs
RANGES = 2
HOLD_S = 0.5  # how long a relay holds a rank's Done at least while its other ranks run on
QUIET_S = 0.5  # past HOLD_S, held ends wait on while the others' still come this close together
HOLD_MAX_S = 2.0  # ... but no longer than this from the first held one
PLAIN = frozenset(("type", "run_id", "status", "pull_errors"))  # a plain end's only fields
ENVELOPE = ("src", "dst", "seq", "v", "after")  # a rank's header's fields that are not its end's
PLAIN_HEADER = PLAIN | frozenset(ENVELOPE)  # ... so a plain end's header has only these


def hold_due(first: float, last: float) -> float:
    """When held ends (the first held at ``first``, the latest at ``last``) are due upward:
    :data:`HOLD_S` after the first, or later while others still come (each within
    :data:`QUIET_S` of the one before: the rest of the node is about to end, and a reduction
    sent now would be one of several partial ones), up to :data:`HOLD_MAX_S` after the first.
    Once every awaited end is in, they go at once, whatever this says."""
    return max(first + HOLD_S, min(last + QUIET_S, first + HOLD_MAX_S))


@dataclass
class _Cell:
    """One cell on this node: the ranks it was sent to, and the ends held so far."""

    ranks: set[int]
    started: float
    held: dict[int, list[Any]] = field(default_factory=dict)  # rank -> [seq, after, header]
    first: float = 0.0  # when the first held Done came
    last: float = 0.0  # ... and the latest
    errors: int = 0  # errors forwarded at once
    slowest: tuple[int, float] = (-1, 0.0)  # (rank, seconds from the cell to its end)


class Reducer:
    """The relay's side: which ends to hold, and the reduced message once they are all in."""

    def __init__(
        self,
        ranks: Iterable[int],
        clock: Callable[[], float] = time.monotonic,
        accepted: Callable[[str], int] | None = None,
        seqs: bool = False,
    ) -> None:
        self._mine = {cell_name(r): r for r in ranks}
        self._seqs = seqs  # the ranks' counters of plain ends go too (a kernel of RANGES 1)
        self._clock = clock
        # the highest control counter the relay passed on from a rank (None: the kernel takes
        # no ranges, e.g. an older one; every end goes as the rank signed it)
        self._accepted = accepted
        self._cells: dict[str, _Cell] = {}
        # the ranks of this node a cell's dst names, read once per dst (the same every cell)
        self._named = ByDst(lambda dst: frozenset(self._mine[d] for d in dst.among(self._mine)))

    def sent(self, header: dict[str, Any]) -> None:
        """A message from the kernel went down: a cell starts on the ranks it names."""
        if header.get("type") != "execute":
            return
        ranks = self._named.get(header["dst"])
        if ranks:
            self._cells[str(header.get("run_id"))] = _Cell(set(ranks), self._clock())

    def hold(self, header: dict[str, Any], buffers: int) -> bool:
        """Whether a rank's verified message is a ``Done`` to hold (False: forward it now)."""
        if header.get("type") != "done" or header["src"] not in self._mine:
            return False
        cell = self._cells.get(str(header.get("run_id")))
        rank = self._mine[header["src"]]
        if cell is None or rank not in cell.ranks or rank in cell.held:
            return False
        now = self._clock()
        if now - cell.started >= cell.slowest[1]:
            cell.slowest = (rank, now - cell.started)
        if header.get("status") == "error" or buffers:
            cell.errors += header.get("status") == "error"
            cell.ranks.discard(rank)  # (forwarded as it is: no longer awaited here)
            return False
        # (the header as it came: its fields are copied out only for an end that is not plain)
        cell.held[rank] = [int(header["seq"]), int(header.get("after", 0)), header]
        cell.first, cell.last = cell.first or now, now
        return True

    def gone(self, ranks: set[int]) -> None:
        """``ranks`` are gone (their connections closed: dead): their ends are awaited no
        more, so a cell's held ends are due once every other rank that got it has ended."""
        for cell in self._cells.values():
            cell.ranks -= ranks - cell.held.keys()

    def awaited(self) -> int:
        """The most ends a cell that holds some still awaits (0: none holds any)."""
        return max((len(c.ranks) - len(c.held) for c in self._cells.values() if c.held), default=0)

    def due(self) -> tuple[list[dict[str, Any]], float | None]:
        """The reduced messages to send now, and in how many seconds the next one is due."""
        now, out, wait = self._clock(), [], None
        for run_id, cell in list(self._cells.items()):
            if not cell.ranks:
                del self._cells[run_id]
            elif cell.held and (
                len(cell.held) == len(cell.ranks) or now >= hold_due(cell.first, cell.last)
            ):
                out.append(self._reduce(run_id, cell))
                cell.ranks -= set(cell.held)
                cell.held, cell.first = {}, 0.0
                if not cell.ranks:
                    del self._cells[run_id]
            elif cell.held:
                left = hold_due(cell.first, cell.last) - now
                wait = left if wait is None else min(wait, left)
        return out, wait

    def _reduce(self, run_id: str, cell: _Cell) -> dict[str, Any]:
        statuses: dict[str, int] = {}
        for _, _, header in cell.held.values():
            statuses[str(header.get("status"))] = statuses.get(str(header.get("status")), 0) + 1
        rank, slowest = cell.slowest
        each, plain, seqs = [], [], []
        for r, (seq, after, header) in sorted(cell.held.items()):
            if self._plain(r, run_id, after, header):
                plain.append(r)
                seqs.append(seq)
            else:
                fields = {k: v for k, v in header.items() if k not in ENVELOPE}
                each.append([r, seq, after, fields])
        out = {
            "type": REDUCED, "run_id": run_id, "done": len(cell.held), "of": len(cell.ranks),
            "statuses": statuses, "errors": cell.errors, "slowest_rank": rank,
            "slowest_ms": round(slowest * 1000, 3), "each": each,
        }  # fmt: skip
        if plain:
            out["ranges"] = spans(plain)
            if self._seqs:  # (for a kernel that checks them: see RANGES)
                out["seqs"] = seqs
        return out

    def _plain(self, rank: int, run_id: str, after: int, header: dict[str, Any]) -> bool:
        """Whether a held end (its header) may go as part of a range (see the module's
        text)."""
        return (
            self._accepted is not None
            and header.get("status") == "ok"
            and header.get("run_id") == run_id
            and not header.get("pull_errors")
            and header.keys() <= PLAIN_HEADER
            and after <= self._accepted(rank_name(rank))
        )


def spans(ranks: list[int]) -> list[list[int]]:
    """Sorted ranks as ``[first, last]`` spans of consecutive ranks."""
    out: list[list[int]] = []
    for r in ranks:
        if out and out[-1][1] == r - 1:
            out[-1][1] = r
        else:
            out.append([r, r])
    return out


class BadReduction(ValueError):
    """A relay's reduced message the kernel refuses (it names why)."""


def expand(
    header: dict[str, Any], node_of: Callable[[int], int | None]
) -> list[tuple[int, int, int, dict[str, Any]]]:
    """The kernel's side: each rank's (rank, cell counter, after, Done fields) of a relay's
    verified reduced message (``node_of``: a rank's node, None for no rank). Refused whole,
    with the cause, where it speaks for a rank that is not its node's (its nodes', for an
    aggregator's merged reductions)."""
    node_of, node = speaker(str(header["src"]), node_of)
    out = []
    try:
        for rank, seq, after, fields in header["each"]:
            if node_of(int(rank)) != node:
                raise BadReduction(f"relay {header['src']} spoke for rank {rank} of another node")
            if not isinstance(fields, dict) or fields.get("type") != "done":
                raise BadReduction(f"relay {header['src']} sent a rank's end that is no Done")
            out.append((int(rank), int(seq), int(after), fields))
    except (TypeError, ValueError, KeyError) as exc:
        if isinstance(exc, BadReduction):
            raise
        raise BadReduction(f"an unreadable reduction from {header['src']}: {exc!r}") from None
    return out


def ranged(
    header: dict[str, Any],
    node_of: Callable[[int], int | None],
    runs: NodeRuns | None = None,
) -> list[tuple[int, int]]:
    """The kernel's side of a reduction's plain ends (``ranges``): its spans of ranks, as
    ``(first, last)``. Refused whole, with the cause, where a span is unreadable or holds a
    rank that is not of the sender's node (its nodes': an aggregator's span may cross them, see
    :mod:`.noderuns`; ``runs``: the cluster's, made once, else each rank of a span is looked
    at). The ranks' counters an older relay adds (``seqs``) are not needed: the relay's own
    counter stands for them (see the module's text)."""
    src = str(header["src"])
    nodes = hop_nodes(src)
    out: list[tuple[int, int]] = []
    try:
        for first, last in header.get("ranges") or ():
            first, last = int(first), int(last)
            if nodes is None or first > last or not _behind(first, last, nodes, node_of, runs):
                raise BadReduction(f"relay {src} spoke for ranks {first}-{last}")
            out.append((first, last))
    except (TypeError, ValueError) as exc:
        if isinstance(exc, BadReduction):
            raise
        raise BadReduction(f"unreadable ranges from {src}: {exc!r}") from None
    return out


def _behind(
    first: int,
    last: int,
    nodes: tuple[int, int],
    node_of: Callable[[int], int | None],
    runs: NodeRuns | None,
) -> bool:
    if runs is not None:
        return runs.within(first, last, nodes)
    return all(
        (node := node_of(r)) is not None and nodes[0] <= node <= nodes[1]
        for r in range(first, last + 1)
    )
