"""Fan-in as reductions: a node's relay answers for its ranks' ends of a cell in one message.

A relay (:mod:`.relay`) holds the ``Done`` each of its ranks sends for a cell and, once every
rank of the node that got the cell has ended (or the first held one has waited
:data:`HOLD_S`: a rank that died, a straggler), sends the kernel ONE message it signs itself,
under its own name (:func:`relay_name`, ``n1`` for node 1, with its own counter): "done on 4/4,
0 errors, slowest rank 6 after 3.1 ms", with each rank's ``Done`` as the rank signed it (its
fields, its cell-socket counter and its ``after``). A ``Done`` that is an error, or that
carries pulled values, is never held: it is forwarded unchanged at once (the first error
reaches the notebook while the other ranks still run).

Trust: a relay holds the cluster's key and is trusted as a rank is, for its own node's ranks
only. The kernel (:func:`expand`) refuses a reduction that speaks for a rank of another node,
and each rank's counter is checked as if its ``Done`` had come directly (a replay is refused).
The kernel then takes each rank's ``Done`` as it would have taken it from the rank, in the
order its ``after`` asks, except that the rank states the ends give are recorded as one event
(one history row) per reduction (:mod:`.fancompact`): the history's readers and every view get
each rank's states back as without relays.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.signing import cell_name

REDUCED = "dones"  # the type of a relay's reduced message (the kernel expands it)
HOLD_S = 0.5  # the longest a relay holds a rank's Done while its other ranks run on


def relay_name(node: int) -> str:
    """The signed name of node ``node``'s relay (its ``src``)."""
    return f"n{node}"


def relay_node(src: str) -> int | None:
    """The node a relay's signed name names; None for any other sender."""
    return int(src[1:]) if src[:1] == "n" and src[1:].isdigit() else None


@dataclass
class _Cell:
    """One cell on this node: the ranks it was sent to, and the ends held so far."""

    ranks: set[int]
    started: float
    held: dict[int, list[Any]] = field(default_factory=dict)  # rank -> [seq, after, fields]
    first: float = 0.0  # when the first held Done came
    errors: int = 0  # errors forwarded at once
    slowest: tuple[int, float] = (-1, 0.0)  # (rank, seconds from the cell to its end)


class Reducer:
    """The relay's side: which ends to hold, and the reduced message once they are all in."""

    def __init__(self, ranks: Iterable[int], clock: Callable[[], float] = time.monotonic) -> None:
        self._mine = {cell_name(r): r for r in ranks}
        self._clock = clock
        self._cells: dict[str, _Cell] = {}

    def sent(self, header: dict[str, Any]) -> None:
        """A message from the kernel went down: a cell starts on the ranks it names."""
        if header.get("type") != "execute":
            return
        dst = header["dst"]
        names = dst if isinstance(dst, list) else [dst]
        ranks = {self._mine[d] for d in names if d in self._mine}
        if ranks:
            self._cells[str(header.get("run_id"))] = _Cell(ranks, self._clock())

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
        fields = {k: v for k, v in header.items() if k not in ("src", "dst", "seq", "v", "after")}
        cell.held[rank] = [int(header["seq"]), int(header.get("after", 0)), fields]
        cell.first = cell.first or now
        return True

    def due(self) -> tuple[list[dict[str, Any]], float | None]:
        """The reduced messages to send now, and in how many seconds the next one is due."""
        now, out, wait = self._clock(), [], None
        for run_id, cell in list(self._cells.items()):
            if not cell.ranks:
                del self._cells[run_id]
            elif cell.held and (len(cell.held) == len(cell.ranks) or now - cell.first >= HOLD_S):
                out.append(self._reduce(run_id, cell))
                cell.ranks -= set(cell.held)
                cell.held, cell.first = {}, 0.0
                if not cell.ranks:
                    del self._cells[run_id]
            elif cell.held:
                left = HOLD_S - (now - cell.first)
                wait = left if wait is None else min(wait, left)
        return out, wait

    @staticmethod
    def _reduce(run_id: str, cell: _Cell) -> dict[str, Any]:
        statuses: dict[str, int] = {}
        for _, _, fields in cell.held.values():
            statuses[str(fields.get("status"))] = statuses.get(str(fields.get("status")), 0) + 1
        rank, slowest = cell.slowest
        return {
            "type": REDUCED, "run_id": run_id, "done": len(cell.held), "of": len(cell.ranks),
            "statuses": statuses, "errors": cell.errors, "slowest_rank": rank,
            "slowest_ms": round(slowest * 1000, 3),
            "each": [[r, *held] for r, held in sorted(cell.held.items())],
        }  # fmt: skip


class BadReduction(ValueError):
    """A relay's reduced message the kernel refuses (it names why)."""


def expand(
    header: dict[str, Any], node_of: Callable[[int], int | None]
) -> list[tuple[int, int, int, dict[str, Any]]]:
    """The kernel's side: each rank's (rank, cell counter, after, Done fields) of a relay's
    verified reduced message (``node_of``: a rank's node, None for no rank). Refused whole,
    with the cause, where it speaks for a rank that is not its node's."""
    node = relay_node(str(header["src"]))
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
