"""An aggregator: the node relay's program one level up (``python -m
jupyter_distributed.cluster.aggregator INDEX``, started by the backend with the cluster's
bootstrap environment; where, and for which nodes: :mod:`.aggregators`).

Its children are node relays: they dial its ROUTER (a Unix socket in the kernel's directory of
mode 0700) instead of the kernel's, and it holds one connection upward, a DEALER to the
kernel's ROUTER. So the kernel holds one connection per aggregator, about √nodes.

- **Down:** a message from the kernel is verified (signature and counter: it holds the
  cluster's key, as a relay does) and forwarded unchanged to each child relay that holds a rank
  its ``dst`` names (once per relay, for a message signed once for many ranks), or the one
  child relay of the rank it names.
- **Up:** a message from below (a rank's, or a relay's batch) is verified the same way and
  forwarded unchanged: the kernel verifies it again, knows a rank by its signed ``src`` and a
  relay by its ``nN`` (a relay still speaks only for its own node's ranks), and checks each
  rank's counter in it, so a replay is refused as before. Which child relay holds which rank
  or relay name it learns from their verified messages, as a relay learns its ranks.
- **Fan-in:** its relays' reductions of a cell's ends (:mod:`.fanin`) are held until every
  rank behind it that got the cell has ended (in a reduction, or in an end forwarded at once:
  an error, pulled values) or the held ones are due as a relay's are
  (:func:`~.fanin.hold_due`: 0.5 s after the first, longer while others still come, at most
  2 s; at once when the ranks it still awaits are cut off, their relay's connection closed),
  then sent as ONE reduction it signs itself, under its own name (``a0-8`` for nodes 0
  to 8, with its own counter, which stands for the relays' and so for their ranks', see
  :mod:`.fanin`): the relays' ends in the order of their ranks (their ``each``), their counts
  added, and their ranges as spans across its nodes (``[0, 1124]`` for 9 nodes of 125 ranks
  that all ended, not 9 spans: :mod:`.noderuns`). So the kernel takes one message, and for a
  cell that ended everywhere one span, per aggregator, not one per node. An error, or an end
  with pulled values, is never held: it goes up at once as its rank signed it.
- **The root** (aggregator 0 where there are several, :func:`~.aggregators.above`): the other
  aggregators dial it, not the kernel, and it holds their merged reductions as it holds its
  relays' (their ``src`` named among ``merges``), so that ONE reduction per cell reaches the
  kernel, signed as the aggregator of every node (``a0-1249``). It forwards every other message
  unchanged, as the others do; it learns which aggregator holds which rank as they do a relay.

Trust: an aggregator holds the cluster's key and is trusted as a relay is, for the ranks of
its own nodes only: the kernel refuses a merged reduction that speaks for a rank of another
node, and one whose counter is not above the last it took from the aggregator (a replay); the
aggregator checked each relay's counter, as each relay checked its ranks'. It vouches for
what its relays vouched for, no more: it signs only the merged reductions; the ranks' own
messages and the relays' batches go up as they were signed. Anything unsigned, replayed, or
from a node not behind it, is dropped (the root's: every node, the other aggregators having
checked theirs; a rank's own message is still checked by the kernel, signature and counter).
It dies with its parent (Linux), ends once it finds the
kernel dead (on the kernel's host), and leaves on its own once its relays have (:mod:`.hoplife`);
the kernel names a dead aggregator by the nodes behind it
(:func:`~.aggregators.aggregator_failure`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq

from ..layout import Layout
from ..protocol.signing import Signer, cell_name, rank_name
from .aggregators import above, aggregated_nodes, bind_address, listen_curve, other_aggregators
from .fanin import REDUCED, hold_due
from .hopframes import send
from .hopnames import aggregator_name, relay_name
from .hoprun import run
from .nodedirs import node_ranks
from .noderuns import joined
from .relay import Hop
from .relaydsts import ByDst

AGGREGATOR_NAME = "aggregator"  # the name its checking signers go by (it signs nothing)


@dataclass
class _Run:
    """One cell behind this aggregator: the ranks whose ends are awaited, the reductions held."""

    awaited: set[int]
    held: list[dict[str, Any]] = field(default_factory=list)
    first: float = 0.0  # when the first held reduction came
    last: float = 0.0  # ... and the latest


class Merger:
    """Its relays' reductions of one cell, merged into one it signs (see the module's text)."""

    def __init__(
        self,
        ranks: dict[str, int],
        clock: Callable[[], float] = time.monotonic,
        merges: frozenset[str] = frozenset(),
    ) -> None:
        self._mine = ranks  # "c3" -> 3: the cell names of the ranks behind it
        self._merges = merges  # the aggregators whose merged reductions it merges (the root's)
        # the ranks here a dst names, read once per dst (its ranks never change)
        self._dsts = ByDst(lambda dst: frozenset(ranks[d] for d in dst.among(ranks)))
        self._clock = clock
        self._runs: dict[str, _Run] = {}

    def sent(self, header: dict[str, Any]) -> None:
        """A message from the kernel went down: a cell starts on the ranks it names."""
        if header.get("type") == "execute":
            ranks = self._dsts.get(header["dst"])
            if ranks:  # (one message per rank, where a cell goes to one rank here)
                self._runs.setdefault(str(header.get("run_id")), _Run(set())).awaited |= ranks

    def passed(self, header: dict[str, Any]) -> None:
        """A rank's own message went up as it is: an end (an error, pulled values) is in."""
        run = self._runs.get(str(header.get("run_id")))
        if run is not None and header.get("type") == "done" and header["src"] in self._mine:
            run.awaited.discard(self._mine[header["src"]])

    def hold(self, header: dict[str, Any]) -> bool:
        """Whether a relay's verified message is a reduction to merge (False: forward it)."""
        run = self._runs.get(str(header.get("run_id")))
        if header.get("type") != REDUCED or run is None:
            return False
        if "nodes" in header and header.get("src") not in self._merges:
            return False
        for first, last in header.get("ranges") or ():
            run.awaited.difference_update(range(int(first), int(last) + 1))
        run.awaited.difference_update(int(each[0]) for each in header.get("each") or ())
        run.held.append(header)
        now = self._clock()
        run.first, run.last = run.first or now, now
        return True

    def gone(self, ranks: set[int]) -> None:
        """``ranks`` are cut off (the connection of their relay, or of the aggregator of their
        nodes, closed: a dead node): their ends are awaited no more, so a cell's held reductions
        are due once every other rank that got it has ended (the kernel names the dead node)."""
        for cell in self._runs.values():
            cell.awaited -= ranks

    def due(self) -> tuple[list[dict[str, Any]], float | None]:
        """The merged reductions to send now, and in how many seconds the next one is due."""
        now, out, wait = self._clock(), [], None
        for run_id, cell in list(self._runs.items()):
            if cell.held and (not cell.awaited or now >= hold_due(cell.first, cell.last)):
                out.append(merged(run_id, cell.held))
                cell.held, cell.first = [], 0.0
            elif cell.held:
                left = hold_due(cell.first, cell.last) - now
                wait = left if wait is None else min(wait, left)
            if not cell.awaited and not cell.held:
                del self._runs[run_id]
        return out, wait


def merged(run_id: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One reduction for several relays' (``parts``): their ends in the order of their ranks,
    their counts added (a node's ``of`` once, however many parts it sent), the slowest of
    theirs (each rank's own counter kept: see .fanin)."""
    parts = sorted(parts, key=_first_rank)
    slowest = max(parts, key=lambda p: float(p.get("slowest_ms") or 0))
    statuses: dict[str, int] = {}
    for part in parts:
        for status, count in (part.get("statuses") or {}).items():
            statuses[status] = statuses.get(status, 0) + int(count)
    out: dict[str, Any] = {
        "type": REDUCED, "run_id": run_id, "statuses": statuses,
        "done": sum(int(p.get("done") or 0) for p in parts),
        "of": sum({p.get("src"): int(p.get("of") or 0) for p in parts}.values()),
        "errors": sum(int(p.get("errors") or 0) for p in parts),
        "slowest_rank": slowest.get("slowest_rank"), "slowest_ms": slowest.get("slowest_ms"),
        "each": sorted((e for p in parts for e in p.get("each") or ()), key=lambda e: e[0]),
        "nodes": list(dict.fromkeys(n for p in parts for n in p.get("nodes") or [p["src"]])),
    }  # fmt: skip
    if any(p.get("seqs") for p in parts):  # (relays of a kernel that checks them: .fanin)
        out["ranges"] = [span for p in parts for span in p.get("ranges") or ()]
        out["seqs"] = [seq for p in parts for seq in p.get("seqs") or ()]
    elif any(p.get("ranges") for p in parts):  # across nodes: one span where they touch
        out["ranges"] = joined(span for p in parts for span in p.get("ranges") or ())
    return out


def _first_rank(part: dict[str, Any]) -> int:
    firsts = [int(s[0]) for s in part.get("ranges") or ()] + [int(e[0]) for e in part["each"]]
    return min(firsts, default=0)


class Aggregator(Hop):
    def __init__(self, boot: dict[str, Any], index: int) -> None:
        layout, relay_of = Layout.from_json(boot["layout"]), boot.get("relay_of")
        count = max(relay_of) + 1 if relay_of else layout.nodes
        self.nodes = aggregated_nodes(boot, index, count)
        names = {relay_name(n) for n in self.nodes}
        cells: dict[str, int] = {}
        # who is behind each sender below: a relay its node's ranks (an aggregator's: below)
        self._behind: dict[str, list[int]] = {}
        for node in self.nodes:
            ranks = self._behind[relay_name(node)] = node_ranks(layout, node, relay_of)
            for r in ranks:
                names.add(rank_name(r))
                cells[cell_name(r)] = r
        # (the root's: the other aggregators, whose merged reductions it merges too)
        merges = frozenset(aggregator_name(*g) for g in other_aggregators(boot, index, count))
        # (its nodes' relays and ranks, and the root's other aggregators: whose it forwards)
        self.names = names | set(cells) | merges
        for first, last in other_aggregators(boot, index, count):  # (the root's: every node)
            every = [r for n in range(first, last + 1) for r in self._behind[relay_name(n)]]
            self._behind[aggregator_name(first, last)] = every
        self.awaited = {rank_name(r) for r in cells.values()}
        below = boot["aggregators"][str(index)]
        up, curve = above(boot, index)  # the kernel, or the root aggregator
        super().__init__(boot, below, up, curve, AGGREGATOR_NAME)
        key = bytes.fromhex(boot["key"])
        self._signer = Signer(key, aggregator_name(self.nodes[0], self.nodes[-1]))
        self._merger = Merger(cells, merges=merges)

    def _bind_below(self, below: str, boot: dict[str, Any]) -> Path | None:
        """On TCP (its relays on other hosts): CurveZMQ, on its host's address."""
        if not below.startswith("tcp://"):
            return super()._bind_below(below, boot)
        if boot.get("aggregator_curve"):
            self._stops.append(listen_curve(self.ctx, self.down, boot))
        self.down.bind(bind_address(below))
        return None

    def _up(self, message: list[zmq.Frame], header: dict[str, Any], src: str) -> None:
        if self._merger.hold(header):
            return
        self._merger.passed(header)
        send(self.up, message)

    def _down(self, message: list[zmq.Frame], header: dict[str, Any]) -> None:
        self._merger.sent(header)
        super()._down(message, header)

    def _lost(self, names: set[str]) -> None:
        """Connections from below closed (a relay, or an aggregator below the root, died or
        left): the ranks whose messages came over them, and those behind the senders, are no
        longer awaited; its held reductions then go up at once, not after the hold."""
        ranks = {r for name in names for r in self._behind.get(name, ())}
        ranks.update(int(name[1:]) for name in names if name[:1] in "rc" and name[1:].isdigit())
        self._merger.gone(ranks)

    def _reduce(self) -> float | None:
        reduced, wait = self._merger.due()
        for fields in reduced:
            send(self.up, self._signer.pack(fields))
        return wait


def main(argv: list[str]) -> int:
    """``INDEX``: the aggregator's number (or the environment variable that holds it)."""
    return run(argv, Aggregator, "aggregator INDEX", "aggregator")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
