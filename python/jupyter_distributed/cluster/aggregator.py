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
- **Up:** a message from below (a rank's, or a relay's own reduction or batch) is verified the
  same way and forwarded unchanged: the kernel verifies it again, knows a rank by its signed
  ``src`` and a relay by its ``nN`` (a relay still speaks only for its own node's ranks), and
  checks each rank's counter in it, so a replay is refused as before. Which child relay holds
  which rank or relay name it learns from their verified messages, as a relay learns its ranks.

It writes and signs nothing itself, so it vouches for nothing a relay or a rank did not sign:
what it adds is a hop the kernel need not trust further than a relay. Anything unsigned,
replayed, or from a node not behind it, is dropped. It dies with its parent (Linux) and ends
once it finds the kernel dead (on the kernel's host); the kernel names a dead aggregator by the
nodes behind it (:func:`~.aggregators.aggregator_failure`).
"""

from __future__ import annotations

import sys
from typing import Any

from ..layout import Layout
from ..protocol.signing import cell_name, rank_name
from .aggregators import aggregated_nodes
from .fanin import relay_name
from .relay import Hop, run
from .relays import node_ranks

AGGREGATOR_NAME = "aggregator"  # the name its checking signers go by (it signs nothing)


class Aggregator(Hop):
    def __init__(self, boot: dict[str, Any], index: int) -> None:
        layout, relay_of = Layout.from_json(boot["layout"]), boot.get("relay_of")
        count = max(relay_of) + 1 if relay_of else layout.nodes
        self.nodes = aggregated_nodes(boot, index, count)
        names = {relay_name(n) for n in self.nodes}
        for node in self.nodes:
            for r in node_ranks(layout, node, relay_of):
                names |= {rank_name(r), cell_name(r)}
        self.names = names  # (its nodes' relays and ranks: whose messages it forwards)
        below = boot["aggregators"][str(index)]
        super().__init__(boot, below, boot["address"], boot.get("curve"), AGGREGATOR_NAME)


def main(argv: list[str]) -> int:
    """``INDEX``: the aggregator's number (or the environment variable that holds it)."""
    return run(argv, Aggregator, "aggregator INDEX", "aggregator")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
