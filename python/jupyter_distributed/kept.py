"""What is made of an immutable object, kept while the same object comes again (issue 26).

A live cluster's rank views give a node's (or an aggregator's) runs of ranks as the same tuple
for every cell (``RankSpans.ident``): what a cell's ends make of it (its states' spans, their
rows, their JSON) is the same each time, and made once per cluster instead of once per host
per cell. Kept by the object's identity, the object itself held so that its id is not reused.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Obj = TypeVar("Obj")
K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class Kept(Generic[Obj, K, T]):
    """``make(obj, key)``'s result, kept per (``obj``, ``key``) while ``obj`` is the same object;
    at most ``most`` kept (then all are dropped at once: a cluster's shapes come again)."""

    def __init__(self, most: int = 4096) -> None:
        self._kept: dict[tuple[int, K], tuple[Obj, T]] = {}
        self._most = most

    def get(self, obj: Obj, key: K, make: Callable[[Obj, K], T]) -> T:
        """What ``make(obj, key)`` gives: made the first time, then kept."""
        at = (id(obj), key)
        kept = self._kept.get(at)
        if kept is not None and kept[0] is obj:
            return kept[1]
        made = make(obj, key)
        if len(self._kept) >= self._most:
            self._kept.clear()
        self._kept[at] = (obj, made)
        return made
