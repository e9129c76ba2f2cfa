"""Relays and aggregators that ended, as the failures of the ranks behind them.

A relay that ended is a dead node, an aggregator the nodes behind it: their ranks are gone with
it. One that exited 0 left after its ranks (:mod:`.hoplife`): their own ends name them.
"""

from __future__ import annotations

import socket
from typing import Any

from ..errors import RankFailure
from ..interface import RankInfo
from .aggregators import ROOT, aggregator_failure, behind
from .relays import relay_failure


def dead_hops(
    processes: Any, info: dict[int, RankInfo], relays: int, fanout: int, now: float
) -> list[tuple[RankFailure, list[int]]]:
    """Each dead relay's or aggregator's failure, with the ranks it cut off."""
    out = []
    for node, code in getattr(processes, "dead_relays", list)():
        if code == 0:
            continue
        ranks = sorted(r for r, i in info.items() if i.coords.node_rank == node)
        host = info[ranks[0]].host if ranks else ""  # (its ranks' hello named it)
        out.append((relay_failure(ranks, node, host or socket.gethostname(), code, now), ranks))
    for index, code in getattr(processes, "dead_aggregators", list)():
        if code == 0:
            continue
        root = index == ROOT and relays > fanout  # (see .aggregators.rooted)
        nodes = behind(index, relays, fanout, root)  # (the root's: every node)
        ranks = sorted(r for r, i in info.items() if i.coords.node_rank in nodes)
        first = [info[r].host for r in ranks if info[r].coords.node_rank == nodes[0]]
        host = first[0] if first else ""  # (it runs on its first node)
        here = host or socket.gethostname()
        failure = aggregator_failure(index, nodes, ranks, here, code, now, root)
        out.append((failure, ranks))
    return out
