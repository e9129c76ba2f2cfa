"""A Ray cluster's node relays (and their aggregators, the same way: one actor on the first node of
each group, listening on TCP on that Ray node's address): one actor per node (on ``auto``, per
Ray node the ranks were placed on, once they span several), in the placement group bundle of the
node's first rank (so on that rank's Ray node, with no resources of its own), running the relay
as the rank actors run the worker; never one of the ranks. A relay actor that ends is a dead
node.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ...errors import LaunchError

RELAY_MODULE = "jupyter_distributed.cluster.relay"
AGGREGATOR_MODULE = "jupyter_distributed.cluster.aggregator"


def check_nodes(ray_nodes: list[str], node_of: list[int]) -> None:
    """Each node's ranks (``node_of``: each rank's node in the plan) must share a Ray node
    (``ray_nodes``: each rank's), as their relay's Unix socket is on one host."""
    for node in sorted(set(node_of)):
        where = sorted({ray_nodes[r] for r, n in enumerate(node_of) if n == node})
        if len(where) > 1:
            raise LaunchError(
                f"node relays on ray: node {node}'s ranks were placed on several Ray nodes "
                f"({', '.join(where)}), so no one relay can reach them; use --ray-placement "
                "pack, or Distributed.relays = 'auto'"
            )


class RelayActors:
    """The relays' actors of one cluster (started by :class:`~.backend.RayProcesses`), or its
    aggregators' (``module`` :data:`AGGREGATOR_MODULE`: one in the bundle of the first rank
    of each group's first node)."""

    def __init__(
        self, ray: Any, remote: Any, pg: Any, firsts: list[int], module: str = RELAY_MODULE
    ) -> None:
        """``firsts``: each node's (aggregator's) first rank, whose bundle it joins, in order."""
        self.module = module
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self._ray = ray
        self.actors = [
            remote.options(
                num_cpus=0,  # (the node's first rank's bundle: it takes none of its own)
                max_concurrency=4,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    pg, placement_group_bundle_index=first
                ),
            ).remote()
            for first in firsts
        ]
        self.waits: dict[Any, int] = {}

    def start(self, env: dict[str, str], timeout: float) -> None:
        starts = [
            actor.start.remote(env, (self.module, str(node)))
            for node, actor in enumerate(self.actors)
        ]
        self._ray.get(starts, timeout=timeout)
        self.waits = {actor.wait.remote(): node for node, actor in enumerate(self.actors)}

    def exited(self) -> list[tuple[int, int]]:
        """(node, return code) of the relays that ended since the last call."""
        if not self.waits:
            return []
        ready, _ = self._ray.wait(list(self.waits), num_returns=len(self.waits), timeout=0)
        out = []
        for ref in ready:
            node = self.waits.pop(ref)
            try:
                code = int(self._ray.get(ref))
            except Exception:  # noqa: BLE001 (the actor died; its relay died with it)
                code = -9
            out.append((node, code))
        return out

    def terminate(self, grace: float) -> None:
        with contextlib.suppress(Exception):
            self._ray.get([a.stop.remote(grace) for a in self.actors], timeout=grace + 5)
        for actor in self.actors:
            with contextlib.suppress(Exception):
                self._ray.kill(actor)
        self.waits = {}
