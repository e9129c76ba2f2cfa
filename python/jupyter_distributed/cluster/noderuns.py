"""Which ranks a relay or an aggregator may speak for, as runs of consecutive ranks per node.

A relay's reduction names its plain ends as spans of ranks (``[0, 124]``), and an aggregator's
merged reduction as spans that may cross its nodes (``[0, 1124]`` for nodes 0 to 8): one span,
not one per node (issue 26). The kernel refuses a span that holds a rank of a node not behind
its sender, or no rank at all. A node's ranks are consecutive in the layout's blocks, but not
where the bootstrap's ``relay_of`` places them otherwise (e.g. every other rank): so the check
is against the cluster's ranks as runs of consecutive ranks on one node, made once per cluster,
and costs one step per node a span crosses, not one per rank.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable


class NodeRuns:
    """A cluster's ranks as ``(first, last, node)`` runs of consecutive ranks on one node."""

    def __init__(self, ranks: Iterable[int], node_of: Callable[[int], int | None]) -> None:
        runs: list[list[int]] = []
        for rank in sorted(ranks):
            node = node_of(rank)
            if node is None:
                continue
            if runs and runs[-1][1] == rank - 1 and runs[-1][2] == node:
                runs[-1][1] = rank
            else:
                runs.append([rank, rank, node])
        self._runs = [(f, la, n) for f, la, n in runs]
        self._firsts = [r[0] for r in self._runs]
        # (answers kept: a cluster's relays and aggregators send the same spans every cell)
        self._within: dict[tuple[int, int, tuple[int, int]], bool] = {}

    def within(self, first: int, last: int, nodes: tuple[int, int]) -> bool:
        """Whether every rank of ``first..last`` is a known rank of a node within ``nodes``
        (``(lowest, highest)``, both included). Looked at once per span and nodes: the runs
        never change."""
        key = (first, last, nodes)
        known = self._within.get(key)
        if known is None:
            if len(self._within) >= 4096:
                self._within.clear()
            known = self._within[key] = self._look(first, last, nodes)
        return known

    def _look(self, first: int, last: int, nodes: tuple[int, int]) -> bool:
        at = bisect_right(self._firsts, first) - 1
        expect = first
        while at >= 0 and at < len(self._runs) and expect <= last:
            run_first, run_last, node = self._runs[at]
            if run_first > expect or run_last < expect or not nodes[0] <= node <= nodes[1]:
                return False
            expect = run_last + 1
            at += 1
        return expect > last


def joined(spans: Iterable[list[int] | tuple[int, int]]) -> list[list[int]]:
    """Spans of ranks (``[first, last]``, in any order, none overlapping) sorted, those that
    touch made one: ``[[0, 124], [125, 249]]`` → ``[[0, 249]]``."""
    out: list[list[int]] = []
    for first, last in sorted((int(f), int(la)) for f, la in spans):
        if out and out[-1][1] + 1 == first:
            out[-1][1] = last
        else:
            out.append([first, last])
    return out
