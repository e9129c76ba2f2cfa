"""The signed names of node relays and aggregators (``n3``, ``a0-8``), and the nodes a
sender's name speaks for: what the kernel's checks of a relay's or an aggregator's messages
(:mod:`.fanin`, :mod:`.fanbatch`, :mod:`.intake`) take a sender to cover.
"""

from __future__ import annotations

from collections.abc import Callable


def relay_name(node: int) -> str:
    """The signed name of node ``node``'s relay (its ``src``)."""
    return f"n{node}"


def relay_node(src: str) -> int | None:
    """The node a relay's signed name names; None for any other sender."""
    return int(src[1:]) if src[:1] == "n" and src[1:].isdigit() else None


def aggregator_name(first: int, last: int) -> str:
    """The signed name of the aggregator of nodes ``first`` to ``last`` (see .aggregator), as
    it signs the reductions it merges: ``a0-8``."""
    return f"a{first}-{last}"


def hop_nodes(src: str) -> tuple[int, int] | None:
    """The nodes a relay's (``n3``) or an aggregator's (``a0-8``) signed name speaks for, as
    (first, last); None for any other sender."""
    if (node := relay_node(src)) is not None:
        return node, node
    first, _, last = src[1:].partition("-")
    if src[:1] == "a" and first.isdigit() and last.isdigit() and int(first) <= int(last):
        return int(first), int(last)
    return None


def speaker(
    src: str, node_of: Callable[[int], int | None]
) -> tuple[Callable[[int], int | None], int | None]:
    """``node_of`` as the checks of what ``src`` sent see it, and the node it speaks for: an
    aggregator's nodes are all its first (a rank of another node is still None's or another's)."""
    nodes = hop_nodes(src)
    if nodes is None or nodes[0] == nodes[1]:
        return node_of, None if nodes is None else nodes[0]
    first, last = nodes

    def behind(rank: int) -> int | None:
        node = node_of(rank)
        return first if node is not None and first <= node <= last else node

    return behind, first
