"""What a relay or an aggregator read a header's ``dst`` as, kept per ``dst``.

A cell's ``dst`` is the same each cell (``["c0-9999"]``), and reading it against a hop's
names is a step per name: at the root aggregator of 10,000 ranks, its 20,000 routes and its
10,000 ranks took ~28 ms a cell, in the cell's path. So each hop reads a ``dst`` once, and again
only once what it read it against changed (:meth:`ByDst.clear`: a route learned anew).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from ..protocol.receivers import Receivers

KEPT = 64  # the dsts a hop keeps what they read as (a cell's, a stack request's, a rank's ...)
T = TypeVar("T")


class ByDst(Generic[T]):
    """``read(Receivers(dst))`` for each ``dst``, kept (the last :data:`KEPT` of them)."""

    def __init__(self, read: Callable[[Receivers], T]) -> None:
        self._read = read
        self._kept: dict[object, T] = {}

    def get(self, dst: object) -> T:
        key = tuple(map(str, dst)) if isinstance(dst, list) else str(dst)
        got = self._kept.get(key)
        if got is None:
            if len(self._kept) >= KEPT:
                self._kept.clear()
            got = self._kept[key] = self._read(Receivers(dst))
        return got

    def clear(self) -> None:
        """What a ``dst`` reads as changed (a hop learned a route anew)."""
        self._kept.clear()
