"""A second level of relays above the node relays (issue 26): aggregators, each between the
kernel and about √nodes node relays, so that the kernel talks to about √nodes peers (35 at
1,250 nodes of 8 ranks: 10,000 ranks), not one per node.

``Distributed.relays`` (``Spec.relays``): with node relays, a second level once there are more
than :data:`AGGREGATE_ABOVE` nodes; ``"tree"`` starts one whatever the count of nodes (so that
tests run the aggregator code at small scale). Node ``n``'s relay dials aggregator
``n // fanout`` (:func:`upward`) instead of the kernel; the aggregators dial the kernel. The
bootstrap says where they listen (``aggregators``, by number as a string) and the ``fanout``.

What an aggregator is and vouches for: :mod:`.aggregator`. Where it runs: on ``local``, a
process beside the relays (:class:`~.relays.LocalRelays`); the other backends start none yet.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..collapse import ranks_text
from ..errors import RankFailure

AGGREGATOR_COMMAND = (sys.executable, "-m", "jupyter_distributed.cluster.aggregator")
AGGREGATE_ABOVE = 200  # nodes: above this many, a second level of relays


def fanout(nodes: int, forced: bool) -> int:
    """How many node relays each aggregator holds: about √nodes (at least 2) where a second
    level is wanted (``forced``, or more than :data:`AGGREGATE_ABOVE` nodes); 0 for none."""
    if nodes < 2 or not (forced or nodes > AGGREGATE_ABOVE):
        return 0
    return max(2, math.ceil(math.sqrt(nodes)))


def aggregator_addresses(directory: Path, nodes: int, per: int) -> dict[str, str]:
    """Where each aggregator listens: a Unix socket in the kernel's directory of mode 0700."""
    return {str(a): f"ipc://{directory}/aggregator-{a}" for a in range(math.ceil(nodes / per))}


def upward(boot: dict[str, Any], node: int) -> str:
    """Where node ``node``'s relay dials: its aggregator where the bootstrap has them, else
    the kernel."""
    aggregators = boot.get("aggregators")
    if not aggregators:
        return str(boot["address"])
    return str(aggregators[str(node // int(boot["fanout"]))])


def aggregated_nodes(boot: dict[str, Any], index: int, nodes: int) -> list[int]:
    """The nodes whose relays dial aggregator ``index`` (of ``nodes`` nodes)."""
    per = int(boot["fanout"])
    return list(range(index * per, min(nodes, (index + 1) * per)))


def aggregator_failure(
    index: int, nodes: Sequence[int], ranks: Sequence[int], host: str, code: int, now: float
) -> RankFailure:
    """A dead aggregator is a dead set of nodes: "aggregator 1 on host h died (killed by
    signal 9): its nodes 3-5 are gone, with their ranks 24-47"."""
    how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
    behind = f"node {nodes[0]} is" if len(nodes) == 1 else f"nodes {ranks_text(nodes)} are"
    with_ranks = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks_text(ranks)}"
    return RankFailure(
        rank=-1, t=now, host=host, kind="relay",
        evalue=f"aggregator {index} on host {host} died ({how}): its {behind} gone, "
        f"with their {with_ranks}",
        exit_code=code if code >= 0 else None, signal=-code if code < 0 else None,
    )  # fmt: skip
