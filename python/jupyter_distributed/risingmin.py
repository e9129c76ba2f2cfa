"""The least of many values that only rise: each rank's latest line in :mod:`.collapse`.

A scan of every value per question costs O(ranks): at 10,000 ranks behind 1,250 relays the
cell's view asked it once per relay's batch, ~1 ms each. Here a rise costs O(log n) (a heap
entry) and a question pops only the entries that a later rise made stale.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Hashable

_SLACK = 4  # the heap is rebuilt from the values when it holds this many entries per key


class RisingMin:
    """Values by key, each of which only rises (a lower value given is ignored). The ``keys``
    given (distinct, e.g. a set; kept, never copied) start at ``start`` without an entry each:
    a cell's view of 10,000 ranks is made in O(1), not 10,000 entries and a heap per cell
    (~2 ms at 10,000 ranks, 0.15 ms at 1,000); a key gets its entry when it first rises."""

    def __init__(self, keys: Collection[Hashable], start: float = -1.0) -> None:
        self._keys, self._start = keys, start
        self._unrisen = len(keys)  # given keys still at start (none has an entry yet)
        self._values: dict[Hashable, float] = {}
        self._heap: list[tuple[float, int, Hashable]] = []

    def get(self, key: Hashable, default: float) -> float:
        value = self._values.get(key)
        if value is not None:
            return value
        return self._start if key in self._keys else default

    def rise(self, key: Hashable, value: float) -> None:
        """``key``'s value is ``value`` now (a new key is added)."""
        old = self._values.get(key)
        if old is None and key in self._keys:
            if value <= self._start:
                return
            self._unrisen -= 1  # (its first rise: an entry from now on)
        elif old is not None and value <= old:
            return
        self._values[key] = value
        heapq.heappush(self._heap, (value, id(key), key))
        if len(self._heap) > _SLACK * len(self._values) + 64:
            self._rebuild()

    def least(self, default: float) -> float:
        """The least value (``default``: no key)."""
        heap, values = self._heap, self._values
        while heap and values[heap[0][2]] != heap[0][0]:
            heapq.heappop(heap)  # (a value that has risen since)
        if self._unrisen:
            return min(self._start, heap[0][0]) if heap else self._start
        return heap[0][0] if heap else default

    def _rebuild(self) -> None:
        self._heap = [(v, id(k), k) for k, v in self._values.items()]
        heapq.heapify(self._heap)
